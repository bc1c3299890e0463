package live

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/terminal"
	"github.com/tower-dev/breakglass/relay/wire"
)

// typeSlotWait is how long a requester's new terminal waits for the one
// before it to close: a reloaded page or a reconnect opens the new one
// while the relay is still reading the old one's close.
const typeSlotWait = 5 * time.Second

// Terminal attaches the caller to a running session's terminal over a
// WebSocket: the requester types, an approver watches.
func (s *Sessions) Terminal(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	if !s.originAllowed(r) {
		return api.Forbidden("origin %q may not open a terminal", r.Header.Get("Origin"))
	}
	t, sess, err := s.sessionFor(r, c, "")
	if err != nil {
		return err
	}
	ns := sess.Namespace
	readOnly, err := s.api.StandingOf(c, t.Cluster, sess).MayOpenTerminal(sess)
	if err != nil {
		return err
	}
	// A watcher joining a process-access session is not shown what came
	// before unless they may view its recording (viewSensitive): from now
	// on, they see only what they could have watched live.
	sensitive := sess.Status.Approval != nil && sess.Status.Approval.ProcessAccess
	opts := terminal.Options{ReadOnly: readOnly, Subprotocol: wire.TerminalProtocol,
		FromNow:     readOnly && sensitive && !s.api.Permissions.Can(c, api.ActionViewSensitive, t.Name, ns),
		CheckOrigin: func(*http.Request) bool { return true }, // checked above, before the upgrade
		Count:       func(dir string, n int) { s.metrics.bytes.WithLabelValues(dir).Add(float64(n)) },
	}
	if sess.Status.Phase.Final() {
		return terminal.Ended(w, r, opts, "the session is "+string(sess.Status.Phase))
	}
	if sess.Status.Phase != v1alpha1.PhaseActive {
		return api.Conflict("the session is %s, not Active", sess.Status.Phase)
	}
	key := keyOf(t.Name, sess)
	live, run, passed, err := s.running(w, r, t, sess)
	if passed {
		return nil
	}
	if err != nil {
		// Ended between the read above and now (its relay let it go):
		// the terminal closes as one open at the end did.
		now := &v1alpha1.Session{}
		if t.Client.Get(r.Context(), client.ObjectKeyFromObject(sess), now) == nil && now.Status.Phase.Final() {
			return terminal.Ended(w, r, opts, "the session is "+string(now.Status.Phase))
		}
		return err
	}
	if !readOnly {
		release, err := s.keyboard(w, r, c, t, sess, live, run, &opts)
		if release == nil {
			return err
		}
		defer release()
	}
	if err := t.Lifecycle.Note(r.Context(), v1alpha1.StepAttach, c.Name, sess, map[bool]string{true: "watching", false: "typing"}[readOnly]); err != nil {
		return err
	}
	mine := opened{Session: live, who: wire.Attached{Name: c.Name, Typing: !readOnly}}
	var typed terminal.Session = mine
	if t.Moderates(ns) {
		s.moderate(t, live, run)
		if !readOnly {
			typed = heldInput{mine}
		}
	}
	if !readOnly {
		notices, done := run.typingTerminal(live)
		defer done()
		opts.Notices = notices
	}
	start := time.Now()
	role := map[bool]string{true: "watcher", false: "requester"}[readOnly]
	s.metrics.terminals.WithLabelValues(role).Inc()
	defer s.metrics.terminals.WithLabelValues(role).Dec()
	err = terminal.Serve(w, r, typed, opts)
	s.log.V(1).Info("terminal closed", "session", key.String(), "caller", c.Name, "after", time.Since(start), "error", err)
	return nil
}

// keyboard gives the requester's new terminal the typing slot, one
// terminal at a time: ?take=1 moves it here from another tab or window,
// which is told so; without it a terminal open elsewhere keeps the
// keyboard, and this one is told why. A move is audited and marked in the
// recording before the other terminal is cut, so that a keyboard taken by
// someone holding the requester's token shows as taken, not as a closed
// tab. release gives the slot back; nil, the terminal was answered (err
// says how, if not by a refusal written to it).
func (s *Sessions) keyboard(w http.ResponseWriter, r *http.Request, c api.Caller, t *Cluster, sess *v1alpha1.Session,
	live *Session, run *liveSession, opts *terminal.Options) (release func(), err error) {
	if r.URL.Query().Get("take") == "1" && run.typingElsewhere() {
		const moved = "the requester's keyboard moved to a new terminal; the one before was closed"
		if err := t.Lifecycle.Note(r.Context(), v1alpha1.StepAttach, c.Name, sess, moved); err != nil {
			return nil, err
		}
		if err := live.Mark(context.WithoutCancel(r.Context()), moved); err != nil {
			s.log.Error(err, "marking a moved keyboard in the recording", "session", keyOf(t.Name, sess).String())
		}
		run.takeTyping()
	}
	select {
	case run.typing <- struct{}{}:
	case <-time.After(typeSlotWait):
		return nil, terminal.Refuse(w, r, *opts, terminal.CloseElsewhere,
			"your terminal is open in another tab or window: move it here to type")
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	moved, done := run.typingHere()
	opts.Moved = moved
	return func() {
		done()
		<-run.typing
	}, nil
}

// originAllowed lets non-browser clients (no Origin) through to the token
// check, and browsers only from the configured origins and the console's.
func (s *Sessions) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	o := u.Scheme + "://" + u.Host
	return s.origin(o)
}
