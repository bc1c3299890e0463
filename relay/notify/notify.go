// Package notify tells people about sessions through a configurable HTTP
// webhook, with a deep link to the session in the portal.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Event is what a webhook receives, one JSON object per POST.
type Event struct {
	// Kind is what happened, e.g. "review.overdue".
	Kind string `json:"kind"`
	// Cluster is the session's cluster, as the relay's config names it.
	Cluster   string    `json:"cluster"`
	Namespace string    `json:"namespace"`
	Session   string    `json:"session"`
	Requester string    `json:"requester"`
	Reason    string    `json:"reason"`
	Link      string    `json:"link"`
	At        time.Time `json:"at"`
	// To names who should act: a person or a group, as configured.
	To string `json:"to,omitempty"`
}

// Webhook posts events to URL. Secrets never go into an event: a session's
// reason and names only.
type Webhook struct {
	URL string
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

// Link is the page an event asks its reader to act on:
// {PortalURL}/sessions/{cluster}/{namespace}/{name}, the session's page,
// with /approve for a request to decide and /review for a review due.
func (w *Webhook) Link(e Event, s *v1alpha1.Session) string {
	link := fmt.Sprintf("%s/sessions/%s/%s/%s", w.PortalURL, url.PathEscape(e.Cluster), url.PathEscape(s.Namespace), url.PathEscape(s.Name))
	switch e.Kind {
	case "request.new":
		link += "/approve"
	case "glass.broken", "review.overdue":
		link += "/review"
	}
	return link
}

// ReviewOverdue tells the fallback reviewer that s waits for its review.
func (w *Webhook) ReviewOverdue(ctx context.Context, s *v1alpha1.Session) error {
	return w.Send(ctx, Event{Kind: "review.overdue", To: w.FallbackReviewer}, s)
}

// Send posts one event about s. A non-2xx answer is an error.
func (w *Webhook) Send(ctx context.Context, e Event, s *v1alpha1.Session) error {
	if e.Cluster == "" {
		e.Cluster = w.Cluster
	}
	e.Namespace, e.Session, e.Requester, e.Reason = s.Namespace, s.Name, s.Spec.Requester, s.Spec.Reason
	e.Link = w.Link(e, s)
	if w.Now != nil {
		e.At = w.Now()
	} else {
		e.At = time.Now()
	}
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	client := w.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("notification webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("notification webhook answered %s", resp.Status)
	}
	return nil
}
