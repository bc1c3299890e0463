package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/relay/debugsession"
)

// apiServerAnswers reports whether the cluster's API server answers now.
func (l *Session) apiServerAnswers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return l.r.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() == nil
}

// streamOver ends the session whose terminal stream ended by itself: the
// shell exited (the requester ended it) or the stream failed (abnormally).
// Either way nobody can type any more, so the pod is recycled and the grant
// revoked now, not at the idle limit. It reports false when someone was
// already ending the session (closing stdin ends the stream too), or got
// there first while it looked at the API server.
func (l *Session) streamOver(ctx context.Context) (reason v1alpha1.EndReason, ended bool, err error) {
	if l.Ending() {
		return "", false, nil
	}
	// A stream ends without an error both when the shell exits and when
	// the connection under it drops (the API server killed, say): the API
	// server not answering now tells the second.
	broke := l.stream.Err()
	if broke == nil && l.apiServerAnswers(ctx) {
		reason, err = l.endFor(ctx, ending{by: l.Session.Spec.Requester, reason: v1alpha1.EndUser})
		return reason, reason != "", err
	}
	if broke == nil {
		broke = errors.New("the API server stopped answering")
		l.brokeWith.Store(&broke)
	}
	why := broke.Error()
	if len(why) > 160 {
		why = why[:160] + "..."
	}
	if !l.stream.RecordingFailed() {
		// The stream broke, not the recording: an API server restarting, a
		// connection dropped. The shell ended with it (its input came from
		// that stream), so the session goes on in a new one: released, for
		// a relay (this one, at its next look) to take up, as after a
		// relay that died, but at once.
		var left bool
		left, err = l.leave(releasing, func() error {
			return l.release(ctx, "the terminal stream to the pod broke ("+why+"): the session goes on in a new debug container", ErrReattaching)
		})
		return "", left, err
	}
	reason, err = l.endFor(ctx, relayEnding(v1alpha1.EndDisconnect, "the terminal stream failed: "+why, true))
	return reason, reason != "", err
}

// Release hands the session over, as a replica shutting down among others
// does instead of ending it: the attach is closed (so the shell ends, as it
// would with a killed relay), everything read from it is written out to
// the recording, and the Session is marked released, so another replica
// resumes it at once (debugsession.Runner.Resume), without waiting for the
// heartbeat to go stale. Nothing is ended, recycled or revoked; the
// terminals are sent to reconnect. A release that cannot be written leaves
// the session to be taken up once its heartbeat is stale, with its
// recording written out all the same.
func (l *Session) Release(ctx context.Context) error {
	_, err := l.leave(releasing, func() error {
		l.mu.Lock() // the heartbeat writes l.Session under it
		name := debugsession.ReplicaName(l.Session.Status.Relay)
		l.mu.Unlock()
		return l.release(ctx, "relay "+name+" is shutting down: another replica takes the session up", ErrMoved)
	})
	return err
}

// ErrReattaching ends the terminals of a session whose stream to the pod
// broke: they reconnect to it in its new shell.
var ErrReattaching = errors.New("the terminal stream to the pod broke: the session goes on in a new shell; reconnect")

// releaseWrite is how long a release keeps trying to write itself while
// the API server does not answer (it restarts, say).
const releaseWrite = time.Minute

func (l *Session) release(ctx context.Context, why string, tell error) error {
	// The terminals first: told to reconnect, not that the session ended
	// (which the stream's end would tell them). What the shell writes from
	// here is still recorded.
	l.out.closeWith(tell)
	l.detach()
	// A release says everything read is written out: a store that does not
	// take it within half a minute gets no release, and the relay taking
	// the session up (once its heartbeat is stale) marks what is missing.
	if err := l.rec.FlushWithin(ctx, 30*time.Second); err != nil {
		l.rec.Abandon()
		l.stream.Cut()
		return fmt.Errorf("the recording could not be written out, so the session is not released (another relay takes it up once its heartbeat is stale, marking what is missing): %w", err)
	}
	l.rec.Abandon()
	var errs []error
	l.mu.Lock()
	s := l.Session
	// At the version this relay last wrote: if another relay took the
	// session up meanwhile, there is nothing left to release.
	var err error
	wait := time.Second
	for tried := time.Now(); ; {
		now := metav1.NewTime(l.r.Clock.Now())
		// Each try bounded: a connection to an API server that died may
		// hang until client-go's health check gives up on it (30 s).
		try, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = l.r.Lifecycle().Make(try, s, lifecycle.Move{Step: v1alpha1.StepRelease, Actor: v1alpha1.PortalUsername, Reason: why,
			Status: func(st *v1alpha1.SessionStatus) { st.Relay, st.Released, st.Heartbeat = "", &now, &now }})
		cancel()
		// A refusal is tried again too: an API server just restarted
		// may refuse Session writes (its policies fail closed) until it
		// has loaded them.
		// Each try is audited, so they come less and less often.
		if err == nil || apierrors.IsConflict(err) || time.Since(tried) > releaseWrite || ctx.Err() != nil {
			break
		}
		time.Sleep(wait)
		wait = min(2*wait, 8*time.Second)
	}
	l.mu.Unlock()
	if err != nil && !apierrors.IsConflict(err) {
		errs = append(errs, fmt.Errorf("marking the session released (another replica takes it up once its heartbeat is stale): %w", err))
	}
	l.stream.Cut()
	return errors.Join(errs...)
}
