package live

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/terminal"
	"github.com/tower-dev/breakglass/relay/wire"
)

// liveSession is a session whose terminal this relay holds, or is starting
// or taking up.
type liveSession struct {
	// live is nil while the session is starting; read it under Sessions.mu,
	// or once ready is closed.
	live *debugsession.Live
	// ready is closed once the start or take-up has settled: live is set,
	// or the entry is gone from Sessions.live.
	ready chan struct{}
	// lost (under Sessions.mu): this replica let go of its sessions while
	// this one was starting or being taken up; it is let go of as it
	// settles, for another replica may be taking it up meanwhile.
	lost bool
	// typing holds the requester's one terminal: one at a time.
	// moveTyping (under mu) closes to move it to another tab or window.
	typing     chan struct{}
	moveTyping chan struct{}
	// attached counts the terminals each person has open here, so that a
	// session's page can say who is typing and who is watching.
	mu       sync.Mutex
	attached map[wire.Attached]int
	// moderated sessions tell onModerators when the count of watchers
	// changes, and the requester's open terminal through typingNotices
	// (moderation.go).
	moderated     bool
	onModerators  func(who string)
	typingNotices chan terminal.Control
	// hookMu runs onModerators one at a time, so the markers and notices
	// follow the watchers' comings and goings in order; watchedShown is
	// whether the last one said someone watches.
	hookMu       sync.Mutex
	watchedShown bool
}

// typingHere marks the terminal that now holds the typing slot: moved closes
// when another of the requester's terminals takes it (takeTyping).
func (l *liveSession) typingHere() (moved <-chan struct{}, done func()) {
	ch := make(chan struct{})
	l.mu.Lock()
	l.moveTyping = ch
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		if l.moveTyping == ch {
			l.moveTyping = nil
		}
		l.mu.Unlock()
	}
}

// typingElsewhere says whether a terminal of the requester's holds the
// typing slot now.
func (l *liveSession) typingElsewhere() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.moveTyping != nil
}

// takeTyping tells the terminal holding the typing slot that it moved:
// it closes, and the slot comes free for the one taking it.
func (l *liveSession) takeTyping() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.moveTyping != nil {
		close(l.moveTyping)
		l.moveTyping = nil
	}
}

func newLiveSession() *liveSession {
	return &liveSession{ready: make(chan struct{}), typing: make(chan struct{}, 1), attached: map[wire.Attached]int{}}
}

// attach counts a's terminal until the returned func is called.
func (l *liveSession) attach(a wire.Attached) (detach func()) {
	l.count(a, +1)
	return func() { l.count(a, -1) }
}

// count adds n to a's terminals, telling a moderated session when its
// watchers change.
func (l *liveSession) count(a wire.Attached, n int) {
	l.mu.Lock()
	if l.attached[a] += n; l.attached[a] <= 0 {
		delete(l.attached, a)
	}
	hook := l.onModerators
	l.mu.Unlock()
	if hook != nil && !a.Typing {
		l.hookMu.Lock()
		defer l.hookMu.Unlock()
		hook(a.Name)
	}
}

// watching says whether name has a watcher's terminal open here.
func (l *liveSession) watching(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attached[wire.Attached{Name: name}] > 0
}

// people is who has a terminal open: the requester typing first, then the
// watchers by name.
func (l *liveSession) people() []wire.Attached {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]wire.Attached, 0, len(l.attached))
	for a := range l.attached {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b wire.Attached) int {
		if a.Typing != b.Typing {
			if a.Typing {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// settle ends a start or take-up of key: run goes on as live, or (live nil) the
// session is not this relay's after all. Requests waiting on it go on.
func (s *Sessions) settle(key sessionKey, run *liveSession, live *debugsession.Live) {
	s.mu.Lock()
	if live == nil {
		delete(s.live, key)
	} else {
		run.live = live
	}
	lost := run.lost
	s.mu.Unlock()
	close(run.ready)
	if live != nil && lost {
		s.log.Info("letting go of a session that settled after this replica let go", "session", key.String())
		go live.Lose()
	}
}

// running is the session sess as this relay runs it. A session this relay
// is starting or taking up is waited for: its Session is Active in the
// cluster a moment before its terminal is attached, and a page that reads
// it Active connects at once. A session another replica runs is passed on
// to it (passed); one nobody here runs is NotRunHere.
func (s *Sessions) running(w http.ResponseWriter, r *http.Request, t *Cluster, sess *v1alpha1.Session) (live *debugsession.Live, run *liveSession, passed bool, err error) {
	key := sessionKey{t.Name, sess.Namespace, sess.Name}
	s.mu.Lock()
	run = s.live[key]
	s.mu.Unlock()
	if run != nil {
		select {
		case <-run.ready:
		case <-r.Context().Done():
			return nil, nil, false, r.Context().Err()
		}
		if run.live != nil {
			return run.live, run, false, nil
		}
		// The start or take-up here failed: what the Session says now.
		if err := t.Client.Get(r.Context(), client.ObjectKeyFromObject(sess), sess); err != nil {
			return nil, nil, false, err
		}
		if sess.Status.Phase != v1alpha1.PhaseActive {
			return nil, nil, false, api.Conflict("the session is %s, not Active", sess.Status.Phase)
		}
	}
	if s.passOn(w, r, sess) {
		return nil, nil, true, nil
	}
	return nil, nil, false, &api.Error{Status: http.StatusConflict, Reason: "NotRunHere", Message: errNotHere.Error()}
}

// errNotHere is an Active session this relay does not hold, e.g. after a
// restart: the sweeper ends it once its heartbeat is stale.
var errNotHere = errors.New("the session is Active but not run by this relay; the sweeper ends it once its heartbeat goes stale")

// typeSlotWait is how long a requester's new terminal waits for the one
// before it to close: a reloaded page or a reconnect opens the new one
// while the relay is still reading the old one's close.
const typeSlotWait = 5 * time.Second

// Start starts the requester's approved session here: its grant, its
// debug container and its recorded terminal, then its limits.
func (s *Sessions) Start(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	ctx := r.Context()
	t, sess, err := s.sessionFor(r, c, "")
	if err != nil {
		return err
	}
	ns := sess.Namespace
	if err := s.api.StandingOf(c, t.Cluster, sess).MayStart(sess); err != nil {
		return err
	}
	key := sessionKey{t.Name, ns, sess.Name}
	s.mu.Lock()
	if _, ok := s.live[key]; ok {
		s.mu.Unlock()
		return api.Conflict("the session is starting or started already")
	}
	if t.presence != nil && !t.presence.present() {
		s.mu.Unlock()
		return &api.Error{Status: http.StatusServiceUnavailable, Reason: "NotPresent", Message: fmt.Sprintf(
			"this relay replica has lost touch with cluster %s a moment ago and starts nothing there until it is back: try again in a few seconds", t.Name)}
	}
	run := newLiveSession()
	s.live[key] = run
	s.mu.Unlock()
	// A caller that hangs up mid-start must not leave a half-started
	// session: the start runs to its end, or takes its grant back.
	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer cancel()
	live, err := t.Runner.Start(startCtx, sess)
	s.settle(key, run, live)
	if err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return api.ClusterError(err)
		}
		// The target is read here first, under the session's own grant (the
		// relay has no standing read to check it with when the request is
		// made): a pod not there leaves the session Approved, to withdraw.
		// Anything not found later ended the start already.
		now := &v1alpha1.Session{}
		if apierrors.IsNotFound(err) && t.Client.Get(ctx, client.ObjectKeyFromObject(sess), now) == nil && now.Status.Phase == v1alpha1.PhaseApproved {
			return &api.Error{Status: http.StatusNotFound, Reason: "TargetNotFound", Message: fmt.Sprintf("%v: withdraw this request and ask again for a pod that runs now", err)}
		}
		return &api.Error{Status: http.StatusServiceUnavailable, Reason: "StartFailed", Message: err.Error()}
	}
	s.metrics.live.Inc()
	// What the answer and the notification show is taken before the
	// watcher may write the Session.
	snapshot := live.Session.DeepCopy()
	s.enforce(key, live)
	s.api.Notify(ctx, t.Name, v1alpha1.NotifySessionStarted, snapshot)
	api.WriteJSON(w, http.StatusOK, s.api.View(c, t.Cluster, snapshot))
	return nil
}

// enforce runs the session's limits until it ends, whoever ends it.
func (s *Sessions) enforce(key sessionKey, live *debugsession.Live) {
	ctx, cancel := context.WithCancel(context.Background())
	s.enforcers.Add(2)
	go func() {
		defer s.enforcers.Done()
		<-live.Ended()
		cancel()
	}()
	go func() {
		defer s.enforcers.Done()
		if reason, err := live.Enforce(ctx, s.limits); reason != "" || (err != nil && ctx.Err() == nil) {
			if err != nil {
				s.log.Error(err, "ending a session on its limit", "session", key.String(), "reason", reason)
			}
		}
		<-live.Ended()
		s.mu.Lock()
		delete(s.live, key)
		s.mu.Unlock()
		s.metrics.live.Dec()
	}()
}

// maxEndNote bounds the words kept with an end, as the Session's schema does.
const maxEndNote = 1024

// End ends a session for a person: one not started yet in the cluster
// alone, a running one where it runs.
func (s *Sessions) End(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	var q wire.EndRequest
	if r.ContentLength != 0 {
		// Kept: the end may be passed on to the replica running the session.
		if err := keepBody(r); err != nil {
			return err
		}
		if err := api.Decode(r, &q); err != nil {
			return err
		}
		if n := utf8.RuneCountInString(q.Reason); n > maxEndNote {
			return api.BadRequest("an end's reason is at most %d characters, not %d", maxEndNote, n)
		}
	}
	ctx := r.Context()
	t, sess, err := s.sessionFor(r, c, "")
	if err != nil {
		return err
	}
	// A moderator's end is judged where the session runs: a replica not
	// running it passes it on (Sessions.Watching).
	reason, err := s.api.StandingOf(c, t.Cluster, sess).MayEnd(sess)
	if err != nil {
		return err
	}
	switch sess.Status.Phase {
	case v1alpha1.PhasePending, v1alpha1.PhaseApproved:
		// Never started: nothing to take back but the request itself.
		end := &v1alpha1.End{By: c.Name, Reason: reason, Note: q.Reason, At: metav1.NewTime(s.clock.Now())}
		if err := t.Lifecycle.Make(ctx, sess, lifecycle.Move{Step: v1alpha1.StepEnd, To: v1alpha1.PhaseEnded, Actor: c.Name,
			Reason: "before it started: " + debugsession.EndReasonText(reason, q.Reason), Status: func(st *v1alpha1.SessionStatus) { st.End = end }}); err != nil {
			return api.ClusterError(err)
		}
		api.WriteJSON(w, http.StatusOK, s.api.View(c, t.Cluster, sess))
		return nil
	}
	live, _, passed, err := s.running(w, r, t, sess)
	if passed || err != nil {
		return err
	}
	if err := live.End(context.WithoutCancel(ctx), c.Name, reason, q.Reason); err != nil {
		return err
	}
	s.api.Notify(ctx, t.Name, v1alpha1.NotifySessionEnded, live.Session)
	api.WriteJSON(w, http.StatusOK, s.api.View(c, t.Cluster, live.Session))
	return nil
}

// runs is key's entry, if this replica runs a started session there.
func (s *Sessions) runs(key sessionKey) *liveSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.live[key]; ok && l.live != nil {
		return l
	}
	return nil
}

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
	key := sessionKey{t.Name, ns, sess.Name}
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
		// ?take=1 moves the requester's terminal here from another tab or
		// window, which is told so; without it a terminal open elsewhere
		// keeps the keyboard, and this one is told why. A move is audited
		// and marked in the recording before the other terminal is cut, so
		// that a keyboard taken by someone holding the requester's token
		// shows as taken, not as a closed tab.
		if r.URL.Query().Get("take") == "1" && run.typingElsewhere() {
			const moved = "the requester's keyboard moved to a new terminal; the one before was closed"
			if err := t.Lifecycle.Note(r.Context(), v1alpha1.StepAttach, c.Name, sess, moved); err != nil {
				return err
			}
			if err := live.Mark(context.WithoutCancel(r.Context()), moved); err != nil {
				s.log.Error(err, "marking a moved keyboard in the recording", "session", key.String())
			}
			run.takeTyping()
		}
		select {
		case run.typing <- struct{}{}:
			defer func() { <-run.typing }()
		case <-time.After(typeSlotWait):
			return terminal.Refuse(w, r, opts, terminal.CloseElsewhere,
				"your terminal is open in another tab or window: move it here to type")
		case <-r.Context().Done():
			return r.Context().Err()
		}
		moved, done := run.typingHere()
		defer done()
		opts.Moved = moved
	}
	if err := t.Lifecycle.Note(r.Context(), v1alpha1.StepAttach, c.Name, sess, map[bool]string{true: "watching", false: "typing"}[readOnly]); err != nil {
		return err
	}
	var typed terminal.Session = live
	if t.Moderates(ns) {
		s.moderate(t, run)
		if !readOnly {
			typed = heldInput{Live: live, run: run}
		}
	}
	if !readOnly {
		notices, done := run.typingTerminal()
		defer done()
		opts.Notices = notices
	}
	defer run.attach(wire.Attached{Name: c.Name, Typing: !readOnly})()
	start := time.Now()
	role := map[bool]string{true: "watcher", false: "requester"}[readOnly]
	s.metrics.terminals.WithLabelValues(role).Inc()
	defer s.metrics.terminals.WithLabelValues(role).Dec()
	err = terminal.Serve(w, r, typed, opts)
	s.log.V(1).Info("terminal closed", "session", key.String(), "caller", c.Name, "after", time.Since(start), "error", err)
	return nil
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
