// Package notify tells people about sessions where they are: Slack, Microsoft
// Teams, e-mail and generic webhooks (plain JSON or CloudEvents), each
// message with a deep link to the session's page. A Dispatcher routes
// events to sinks by cluster, namespace and kind, and delivers them in the
// background: rate limited per destination (the rest folded into a
// digest), retried, counted, never holding up a session.
package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Event is what a webhook receives, one JSON object per POST.
type Event struct {
	// Kind is what happened, e.g. "review.overdue".
	Kind string `json:"kind"`
	// Cluster is the session's cluster, as the relay's config names it.
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Session   string `json:"session"`
	Requester string `json:"requester"`
	Reason    string `json:"reason"`
	// Decided is what the person who decided said, where the event is a
	// decision ("denied by bob: not during the freeze"): the requester's
	// reason alone would leave the reader guessing why.
	Decided string    `json:"decided,omitempty"`
	Link    string    `json:"link"`
	At      time.Time `json:"at"`
	// To names who should act: a person or a group, as configured.
	To string `json:"to,omitempty"`
}

// To names whom a notification of kind about s is for, by the
// vocabulary's audience (v1alpha1.NotificationAudience): the requester by
// name, the approvers or everyone routed by that word (the routes say who
// they are), the fallback reviewer by the name configured.
func To(kind string, s *v1alpha1.Session, fallbackReviewer string) string {
	switch v1alpha1.NotificationAudience(kind) {
	case v1alpha1.AudienceRequester:
		return s.Spec.Requester
	case v1alpha1.AudienceApprovers:
		return "approvers"
	case v1alpha1.AudienceEveryone:
		return "everyone"
	case v1alpha1.AudienceFallbackReviewer:
		return fallbackReviewer
	}
	return ""
}

// Webhook posts events to URL. Secrets never go into an event: a session's
// reason and names only. Send posts at once and says how it went (the
// sweeper's --notify-url); as a Dispatcher's Sink it posts what was queued.
type Webhook struct {
	URL string
	// Format is FormatJSON (the default, as notifyURL always posted) or
	// FormatCloudEvents.
	Format string
	// Source names the sender in a CloudEvent's source, before the
	// cluster (default "breakglass").
	Source string
	// PortalURL is the portal's base address (the relay's console:
	// https://relay.example/console); see Link.
	PortalURL string
	// Cluster names the cluster of events that do not name one (the
	// sweeper's, which watches one cluster).
	Cluster string
	// FallbackReviewer is told when a glass-broken session's review is overdue.
	FallbackReviewer string
	Client           *http.Client
	Now              func() time.Time
}

// Link is the page an event asks its reader to act on: see Links.For.
func (w *Webhook) Link(e Event, s *v1alpha1.Session) string {
	return Links{PortalURL: w.PortalURL}.For(e.Kind, e.Cluster, s.Namespace, s.Name)
}

// ReviewOverdue tells the fallback reviewer that s waits for its review.
func (w *Webhook) ReviewOverdue(ctx context.Context, s *v1alpha1.Session) error {
	return w.Send(ctx, Event{Kind: v1alpha1.NotifyReviewOverdue, To: To(v1alpha1.NotifyReviewOverdue, s, w.FallbackReviewer)}, s)
}

// Send posts one event about s. A non-2xx answer is an error.
func (w *Webhook) Send(ctx context.Context, e Event, s *v1alpha1.Session) error {
	if e.Cluster == "" {
		e.Cluster = w.Cluster
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	return w.Deliver(ctx, Message{Notices: []Notice{newNotice(e, s, Links{PortalURL: w.PortalURL}, now())}})
}

// Kind is "webhook".
func (w *Webhook) Kind() string { return "webhook" }

// Deliver posts each of m's notices, one event per POST: a receiver that
// is a program wants every event, so webhooks get no digests.
func (w *Webhook) Deliver(ctx context.Context, m Message) error {
	for _, n := range m.Notices {
		body, contentType, err := w.encode(n)
		if err != nil {
			return permanent(err)
		}
		if _, err := post(ctx, w.Client, w.URL, contentType, body, nil); err != nil {
			return fmt.Errorf("notification webhook: %w", err)
		}
	}
	return nil
}

func (w *Webhook) encode(n Notice) ([]byte, string, error) {
	if w.Format == FormatCloudEvents {
		b, err := cloudEventJSON(n, w.Source)
		return b, CloudEventsContentType, err
	}
	b, err := json.Marshal(n.Event)
	return b, "application/json", err
}
