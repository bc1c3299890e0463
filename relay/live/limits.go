package live

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/debugsession"
)

// Enforce keeps the heartbeat and ends the session when a limit is reached,
// or at once when its terminal stream ends by itself (the shell exited, or
// the stream failed), returning why; "" when something else ended it
// first (a person, the grant's expiry) or it left this relay. It checks
// every second of the runner's clock, so tests move time instead of
// sleeping.
func (l *Session) Enforce(ctx context.Context, limits debugsession.Limits) (v1alpha1.EndReason, error) {
	r := l.r
	// The stop as the Session says it now (an extension moves it again,
	// under l.mu).
	l.mu.Lock()
	l.stopAt.Store(stopOf(l.Session.Status))
	l.mu.Unlock()
	if limits.Flush <= 0 {
		limits.Flush = 5 * time.Second
	}
	l.beatEvery.Store(int64(limits.Heartbeat))
	lastBeat, lastFlush := r.Clock.Now(), r.Clock.Now()
	// Others count from the heartbeat the Session holds (the start's or the
	// claim's, written before the debug container ran), not from now.
	l.mu.Lock()
	if hb := l.Session.Status.Heartbeat; hb != nil && hb.Time.Before(lastBeat) {
		lastBeat = hb.Time
	}
	l.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-l.stream.Ended():
			if reason, ended, err := l.streamOver(ctx); ended {
				return reason, err
			}
			<-l.ended
			return "", nil
		case <-r.Clock.After(time.Second):
		}
		now := r.Clock.Now()
		viewers, alone := l.out.watchers()
		var reason v1alpha1.EndReason
		switch {
		case l.stopAt.Load() != 0 && !now.Before(time.Unix(0, l.stopAt.Load())):
			reason = v1alpha1.EndHardStop
		case now.Sub(time.Unix(0, l.lastInput.Load())) >= limits.Idle:
			reason = v1alpha1.EndIdle
		case viewers == 0 && now.Sub(alone) >= limits.Disconnect:
			reason = v1alpha1.EndDisconnect
		}
		if reason != "" {
			return l.endFor(ctx, relayEnding(reason, "", false))
		}
		if now.Sub(lastFlush) >= limits.Flush {
			// A failed segment is written with the next one; a recording that
			// cannot be written at all ends the terminal stream (Output fails).
			if err := l.rec.Flush(ctx); err == nil {
				lastFlush = now
			}
		}
		if now.Sub(lastBeat) >= limits.Heartbeat {
			// A heartbeat waits no longer than the let-go mark (a second at
			// least): one that hangs must not keep this relay on past it.
			// One written late is still safe: it is written at the version
			// this relay last wrote, which another's claim would have moved.
			left := max(debugsession.StaleAfter(limits.Heartbeat)-limits.Heartbeat-now.Sub(lastBeat), time.Second)
			bctx, cancel := context.WithTimeout(ctx, left)
			err := l.heartbeat(bctx)
			cancel()
			if errors.Is(err, errTakenUp) {
				l.Lose()
				return "", nil
			}
			if ctx.Err() != nil {
				// The relay is stopping: the beat was cut short, not refused.
				return "", ctx.Err()
			}
			if err == nil {
				lastBeat = now
			} else if debugsession.MustLetGo(lastBeat, r.Clock.Now(), limits.Heartbeat) {
				// Others may count it left soon: this relay stops first.
				r.Log.Error(err, "the session's heartbeat could not be written: letting go of it", "session", l.Session.Namespace+"/"+l.Session.Name,
					"last", lastBeat)
				l.Lose()
				return "", nil
			}
		}
	}
}

// errTakenUp says another relay resumed the session (or the sweeper ended
// it) since this relay last wrote it.
var errTakenUp = errors.New("another relay took the session up")

// heartbeat writes the relay's sign of life at the version it last wrote:
// a Session someone else wrote since is read again, and if another relay
// resumed it or it is no longer Active, this relay no longer runs it.
func (l *Session) heartbeat(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Session.Status.Phase != v1alpha1.PhaseActive {
		return nil
	}
	held := l.Session.DeepCopy()
	err := l.r.Lifecycle().Beat(ctx, l.Session)
	if !apierrors.IsConflict(err) {
		return err
	}
	fresh := &v1alpha1.Session{}
	if gerr := l.r.Client.Get(ctx, client.ObjectKeyFromObject(l.Session), fresh); gerr != nil {
		return err
	}
	if debugsession.TakenUp(held, fresh) {
		return errTakenUp
	}
	// Someone wrote something else (the sweeper, a decision): still this
	// relay's session, so beat again from there at once; a refused beat
	// counts toward letting go.
	*l.Session = *fresh
	return l.r.Lifecycle().Beat(ctx, l.Session)
}

// keepBeating writes the heartbeat while an end runs (which may wait on
// the recording store for minutes): a session being ended must not look
// left to another relay, which would take it up meanwhile.
func (l *Session) keepBeating() (stop func()) {
	every := time.Duration(l.beatEvery.Load())
	if every <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
			if errors.Is(l.heartbeat(ctx), errTakenUp) {
				return
			}
		}
	}()
	return cancel
}
