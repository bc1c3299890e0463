package notify

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Links makes the deep links every sink shows, so a chat button, an
// e-mail and a webhook all point at the same page.
type Links struct {
	// PortalURL is the portal's base address (the relay's console:
	// https://relay.example/console).
	PortalURL string
}

// For is the page an event of kind asks its reader to act on:
// {PortalURL}/sessions/{cluster}/{namespace}/{name}, the session's page,
// with /approve for a request to decide and /review for a review due.
func (l Links) For(kind, cluster, namespace, name string) string {
	link := fmt.Sprintf("%s/sessions/%s/%s/%s", strings.TrimSuffix(l.PortalURL, "/"), url.PathEscape(cluster), url.PathEscape(namespace), url.PathEscape(name))
	switch kind {
	case v1alpha1.NotifyRequestNew:
		link += "/approve"
	case v1alpha1.NotifyGlassBroken, v1alpha1.NotifyReviewOverdue:
		link += "/review"
	}
	return link
}

// Notice is one event as the sinks show it: who asks, for what, why, until
// when, who decides, and where to go. It holds plain values only, taken
// from the Session before Send returns, so nothing queued shares memory
// with a Session the caller goes on changing.
type Notice struct {
	// Event is what the generic webhook sends, unchanged.
	Event
	// ID names this notice in every delivery and retry of it (a
	// CloudEvent's id), so a receiver can drop a repeat.
	ID             string
	Pod, Container string
	Mode           v1alpha1.SessionMode
	// Role is the debug ClusterRole the session binds (or would).
	Role        string
	GlassBroken bool
	// Deadline is the hard stop of a session that has one; before it
	// starts, Duration is what was asked.
	Deadline time.Time
	Duration time.Duration
	// Approvers names the group the matching routes say decides.
	Approvers string
}

// newNotice reads what every message says from e and s.
func newNotice(e Event, s *v1alpha1.Session, links Links, at time.Time) Notice {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	e.Namespace, e.Session, e.Requester, e.Reason = s.Namespace, s.Name, s.Spec.Requester, s.Spec.Reason
	e.Decided = decided(e.Kind, s)
	e.Link = links.For(e.Kind, e.Cluster, s.Namespace, s.Name)
	e.At = at
	n := Notice{Event: e, ID: hex.EncodeToString(id), Pod: s.Spec.TargetPod, Container: s.Spec.TargetContainer, Mode: s.Spec.Mode,
		GlassBroken: s.Spec.GlassBroken, Duration: s.Spec.Duration.Duration, Role: v1alpha1.DebugRole}
	if s.Spec.ProcessAccess {
		n.Role = v1alpha1.DebugProcessRole
	}
	if g := s.Status.Grant; g != nil && g.Role != "" {
		n.Role = g.Role
	}
	if d := s.Status.Deadline; d != nil {
		n.Deadline = d.UTC()
	}
	return n
}

// decided is what the decider of kind said about s, with who they are.
func decided(kind string, s *v1alpha1.Session) string {
	said := func(by, words string) string {
		if words == "" {
			return by
		}
		return by + ": " + words
	}
	st := s.Status
	switch kind {
	case v1alpha1.NotifyRequestDenied:
		if st.Denial != nil {
			return said("denied by "+st.Denial.By, st.Denial.Reason)
		}
	case v1alpha1.NotifyRequestApproved:
		if st.Approval != nil {
			return said("approved by "+st.Approval.By, st.Approval.Comment)
		}
	case v1alpha1.NotifyExtensionApproved, v1alpha1.NotifyExtensionDenied:
		if n := len(st.Extensions); n > 0 {
			x := st.Extensions[n-1]
			return said(strings.ToLower(string(x.Decision))+" by "+x.DecidedBy, x.Comment)
		}
	case v1alpha1.NotifySessionEnded:
		if st.End != nil {
			return said("ended by "+st.End.By, st.End.Note)
		}
	}
	return ""
}

// Title is the message's headline.
func (n Notice) Title() string {
	if t, ok := Titles[n.Kind]; ok {
		return t
	}
	return n.Kind
}

// Titles are each notification kind's headline, in every sink and portal.
var Titles = map[string]string{
	v1alpha1.NotifyRequestNew:         "Debug access requested",
	v1alpha1.NotifyRequestApproved:    "Debug request approved",
	v1alpha1.NotifyRequestDenied:      "Debug request denied",
	v1alpha1.NotifyGlassBroken:        "Glass broken: debugging without approval",
	v1alpha1.NotifySessionStarted:     "Debug session started",
	v1alpha1.NotifySessionEnded:       "Debug session ended",
	v1alpha1.NotifySessionResumed:     "Debug session resumed",
	v1alpha1.NotifyReviewOverdue:      "Review overdue",
	v1alpha1.NotifyExtensionRequested: "More time requested",
	v1alpha1.NotifyExtensionApproved:  "More time approved",
	v1alpha1.NotifyExtensionDenied:    "More time denied",
}

// Target is the pod the session looks into, as people read it.
func (n Notice) Target() string {
	t := fmt.Sprintf("pod %s in %s on %s", n.Pod, n.Namespace, n.Cluster)
	if n.Container != "" {
		t = fmt.Sprintf("pod %s (container %s) in %s on %s", n.Pod, n.Container, n.Namespace, n.Cluster)
	}
	return t
}

// What is the session and the access it gives.
func (n Notice) What() string {
	return fmt.Sprintf("%s; session %s, %s mode, role %s", n.Target(), n.Session, n.Mode, n.Role)
}

// Until is when the access ends: the hard stop, or the duration asked.
func (n Notice) Until() string {
	if !n.Deadline.IsZero() {
		return n.Deadline.Format("2006-01-02 15:04 MST") + " (hard stop)"
	}
	return shortDuration(n.Duration) + " from its start"
}

// Action says what the reader does next. A link only opens a page: every
// decision is made in the portal, signed in, where the relay checks who
// decides.
func (n Notice) Action() string {
	switch n.Kind {
	case v1alpha1.NotifyRequestNew, v1alpha1.NotifyExtensionRequested:
		return "Approve or deny in the portal after signing in; the link only opens the page."
	case v1alpha1.NotifyGlassBroken, v1alpha1.NotifyReviewOverdue:
		return "Review it in the portal after signing in; the link only opens the page."
	}
	return "The link opens the session's page in the portal (sign-in required)."
}

// Button is the label of the link to the page.
func (n Notice) Button() string {
	switch n.Kind {
	case v1alpha1.NotifyRequestNew, v1alpha1.NotifyExtensionRequested:
		return "Open the request"
	case v1alpha1.NotifyGlassBroken, v1alpha1.NotifyReviewOverdue:
		return "Open the review"
	}
	return "Open the session"
}

// Summary is the one line a digest or a chat preview shows.
func (n Notice) Summary() string {
	return fmt.Sprintf("%s: %s, %s", n.Title(), n.Requester, n.Target())
}

// Message is what one delivery carries: one notice, or, when a rate limit
// held several back, all of them as one digest.
type Message struct {
	Notices []Notice
}

// Digest says whether m folds several notices into one message.
func (m Message) Digest() bool { return len(m.Notices) > 1 }

// digestTitle is a digest's headline, e.g. "5 more requests in shop on flight-1".
func digestTitle(ns []Notice) string {
	noun := "requests"
	ons, nss := map[string]bool{}, map[string]bool{}
	for _, n := range ns {
		if n.Kind != v1alpha1.NotifyRequestNew {
			noun = "notifications"
		}
		ons[n.Cluster], nss[n.Namespace] = true, true
	}
	t := fmt.Sprintf("%d more %s", len(ns), noun)
	if len(nss) == 1 {
		t += " in " + ns[0].Namespace
	}
	if len(ons) == 1 {
		t += " on " + ns[0].Cluster
	}
	return t
}

// digestMax is how many notices a digest lists one by one; the rest are counted.
const digestMax = 20

// shortDuration is 30m for 30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// plain drops control characters from user-supplied text, keeping line
// breaks and tabs: a reason is shown, never interpreted by a terminal or
// a renderer.
func plain(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// fit escapes s rune by rune with esc and cuts it to at most max runes,
// ending in "…" when cut. It never cuts through an escape, so a cut text
// is as safe as a whole one.
func fit(s string, max int, esc func(rune) string) string {
	var b strings.Builder
	n, cut := 0, false
	for _, r := range s {
		p := esc(r)
		l := utf8.RuneCountInString(p)
		if n+l > max-1 {
			cut = true
			break
		}
		b.WriteString(p)
		n += l
	}
	if !cut {
		return b.String()
	}
	// Whatever was left would not fit beside the ellipsis; check that all
	// of it would not have fit without one.
	if whole := escapeAll(s, esc); utf8.RuneCountInString(whole) <= max {
		return whole
	}
	return b.String() + "…"
}

func escapeAll(s string, esc func(rune) string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteString(esc(r))
	}
	return b.String()
}
