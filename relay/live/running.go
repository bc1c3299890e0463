package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/wire"
)

// Session is a session this replica runs, its one owner: its terminal
// stream and the viewers of its output, its recording, its limits and
// heartbeat, its extensions and how it leaves (ended, released or let go).
// The debug runner made its grant and debug container; it comes back to
// the runner only to take them away.
type Session struct {
	Session *v1alpha1.Session
	r       *debugsession.Runner
	stream  *debugsession.Stream
	rec     *recording.Recorder
	out     *fanout
	// exit is how the session leaves this relay (an exit; stillRunning
	// until someone asks), moved from stillRunning once, by leave.
	exit atomic.Int32
	// mu guards Session's status between the heartbeat and the end.
	mu sync.Mutex
	// lastInput is when the person last typed (unix nanoseconds on the runner's clock).
	lastInput atomic.Int64
	// ended is closed once the session has left: ended, released or lost.
	ended chan struct{}
	// brokeWith is what streamOver found broken under a stream that ended
	// without an error of its own: the end reports it. Atomic: a person's
	// end may read it while streamOver looks at the API server.
	brokeWith atomic.Pointer[error]
	// beatEvery is Enforce's heartbeat interval, kept up during an end.
	beatEvery atomic.Int64
	// stopAt is when the session stops (unix nanoseconds; 0: nothing
	// set): its hard stop or its grant's expiry, whichever comes first. An
	// extension moves it, with grantTimer (under mu).
	stopAt     atomic.Int64
	grantTimer *time.Timer
}

// Start starts an approved session with runner and runs it here: the
// runner grants and adds the debug container, then hands over its
// recorded terminal. A session that cannot be recorded is refused before
// any grant exists; a failure after the grant takes the grant back.
func Start(ctx context.Context, runner *debugsession.Runner, s *v1alpha1.Session) (*Session, error) {
	l := newSession(runner, s)
	st, err := runner.Start(ctx, s, l.screen())
	if err != nil {
		return nil, err
	}
	return l.attached(ctx, st, v1alpha1.EndFailedStart, "the start failed")
}

// Resume takes up an Active session whose relay stopped without ending it
// (debugsession.Runner.Resume says when, and how) and runs it here.
func Resume(ctx context.Context, runner *debugsession.Runner, s *v1alpha1.Session, stale time.Duration, relayGone bool) (*Session, error) {
	l := newSession(runner, s)
	st, err := runner.Resume(ctx, s, stale, relayGone, l.screen())
	if err != nil {
		return nil, err
	}
	return l.attached(ctx, st, v1alpha1.EndDisconnect, "the resume failed")
}

func newSession(r *debugsession.Runner, s *v1alpha1.Session) *Session {
	return &Session{Session: s, r: r, out: newFanout(r.Clock.Now()), ended: make(chan struct{})}
}

// screen shows the terminal's output to the viewers; a stream that ended
// while the session was leaving ends them too (one that ended by itself is
// streamOver's to tell them about: ended, or to reconnect).
func (l *Session) screen() debugsession.Screen {
	return debugsession.Screen{Show: l.out.write, Over: func() {
		if l.Ending() {
			l.out.close()
		}
	}}
}

// attached takes over st, the session's terminal, and audits the attach;
// an attach that cannot be audited ends the session for failed, saying
// what failed.
func (l *Session) attached(ctx context.Context, st *debugsession.Stream, failed v1alpha1.EndReason, what string) (*Session, error) {
	now := l.r.Clock.Now()
	l.stream, l.rec = st, st.Recording
	// Nobody could type or watch before the terminal was there: the idle
	// and disconnect limits count from now.
	l.lastInput.Store(now.UnixNano())
	l.out.nobodySince(now)
	l.stopAt.Store(stopOf(l.Session.Status))
	l.endAtGrantExpiry(l.Session.Status.Grant.ExpiresAt.Time)
	container := v1alpha1.DebugContainerName(l.Session.Name, l.Session.Status.Resumes)
	if err := l.r.Note(ctx, v1alpha1.StepAttach, l.Session, container); err != nil {
		detail := fmt.Sprintf("%s: the attach could not be audited: %v", what, err)
		return nil, errors.Join(fmt.Errorf("auditing the attach: %w", err), l.finish(context.Background(), relayEnding(failed, detail, true)))
	}
	return l, nil
}

// endAtGrantExpiry is the backstop that ends the session when its grant
// expires, on the wall clock, whatever else ends it or fails to: the API
// server checked the grant when the attach stream opened, not since, so the
// relay itself closes the stream (and with it the shell's input) at the
// grant's TTL. Enforce ends the session at its hard stop, or at the grant's
// expiry if that comes first, long before; this holds when Enforce does not
// run.
func (l *Session) endAtGrantExpiry(expires time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.grantTimer = time.AfterFunc(time.Until(expires), func() {
		if err := l.finish(context.Background(), relayEnding(v1alpha1.EndHardStop, "its grant expired", false)); err != nil {
			l.r.Log.Error(err, "ending a session at its grant's expiry", "session", l.Session.Namespace+"/"+l.Session.Name)
		}
	})
	timer := l.grantTimer
	go func() {
		<-l.ended
		timer.Stop()
	}()
}

// moveStopLocked follows an extension: the hard stop and the backstop at
// the new grant's expiry move to what the Session now says. Call under mu.
func (l *Session) moveStopLocked() {
	l.stopAt.Store(stopOf(l.Session.Status))
	if g := l.Session.Status.Grant; g != nil && l.grantTimer != nil {
		l.grantTimer.Reset(time.Until(g.ExpiresAt.Time))
	}
}

// stopOf is when a session with status st stops, in unix nanoseconds (0:
// nothing set): its hard stop, or its grant's expiry if that comes first.
// Whatever the Session says, the stream never outlives the grant: the API
// server checked the grant only when the stream opened.
func stopOf(st v1alpha1.SessionStatus) int64 {
	var stop time.Time
	if st.Deadline != nil {
		stop = st.Deadline.Time
	}
	if g := st.Grant; g != nil && (stop.IsZero() || g.ExpiresAt.Time.Before(stop)) {
		stop = g.ExpiresAt.Time
	}
	if stop.IsZero() {
		return 0
	}
	return stop.UnixNano()
}

// Write sends the person's keystrokes to the terminal.
func (l *Session) Write(p []byte) (int, error) {
	l.lastInput.Store(l.r.Clock.Now().UnixNano())
	return l.stream.Write(p)
}

// Mark records a marker in the session's recording: a moment a reviewer
// is to find.
func (l *Session) Mark(ctx context.Context, note string) error { return l.rec.Mark(ctx, note) }

// Resize sets the terminal's size and records it. A resize is not typing:
// it never holds off the idle limit.
func (l *Session) Resize(ctx context.Context, cols, rows uint16) error {
	return l.stream.Resize(ctx, cols, rows)
}

// Ended is closed once the session has left this relay: ended, whoever
// ended it, released to another, or lost to one.
func (l *Session) Ended() <-chan struct{} { return l.ended }

// Output returns who's viewer of the terminal's output from now on, shown
// the recent screen first; closing it is who leaving. Each viewer counts:
// toward the people on the session's page, the watchers a moderated
// session waits for, and the disconnect limit.
func (l *Session) Output(who wire.Attached) io.ReadCloser {
	return l.out.subscribe(who, l.r.Clock.Now, true)
}

// OutputFromNow returns who's viewer of the output from now on only: no
// replay of the recent screen.
func (l *Session) OutputFromNow(who wire.Attached) io.ReadCloser {
	return l.out.subscribe(who, l.r.Clock.Now, false)
}

// watching says whether name has a watcher's terminal open here.
func (l *Session) watching(name string) bool {
	return slices.Contains(l.out.people(), wire.Attached{Name: name})
}

// opened is the terminal as one person has it open: what it shows is
// theirs to count.
type opened struct {
	*Session
	who wire.Attached
}

func (o opened) Output() io.ReadCloser        { return o.Session.Output(o.who) }
func (o opened) OutputFromNow() io.ReadCloser { return o.Session.OutputFromNow(o.who) }

// Snapshot is a copy of the Session as this relay last wrote or read it.
func (l *Session) Snapshot() *v1alpha1.Session {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Session.DeepCopy()
}

// Activity is what the idle and disconnect limits count from: when the
// person last typed, how many terminals watch, and since when none has
// (meaningful when viewers is 0).
func (l *Session) Activity() (lastInput time.Time, viewers int, alone time.Time) {
	viewers, alone = l.out.watchers()
	return time.Unix(0, l.lastInput.Load()), viewers, alone
}
