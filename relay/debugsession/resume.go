package debugsession

import (
	"context"
	"errors"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/lifecycle"
)

// ErrNotResumable says a session is not for this relay to take up: another
// relay holds it (its heartbeat is fresh, or it won the race to resume it),
// or it is past what its grant allows, which the sweeper finishes.
var ErrNotResumable = errors.New("not resumable here")

// Resume takes up an Active session whose relay stopped without ending it
// (killed, its node drained), once its heartbeat is older than stale. The
// debug container's shell ended with that relay's attach (the container
// takes its input once), so the session goes on in a new debug container
// in the same pod, under the same grant, hard stop and recording: the
// recording continues with a marker saying where, and what the old relay
// had not yet written out is missing. Which relay resumes is settled by
// the API server: the resume is written to the Session at the version
// read, before anything else is done, and only one writer wins.
//
// relayGone says the caller saw the session's relay go (its presence Lease
// lapsed or was deleted): the heartbeat is then not waited for.
func (r *Runner) Resume(ctx context.Context, s *v1alpha1.Session, stale time.Duration, relayGone bool) (*Live, error) {
	st := s.Status
	now := r.Clock.Now()
	if err := Resumable(s, now, stale, relayGone); err != nil {
		return nil, err
	}
	rb := &rbacv1.RoleBinding{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: st.Grant.RoleBinding}, rb); err != nil {
		return nil, fmt.Errorf("session %s's grant %s: %w (%w)", s.Name, st.Grant.RoleBinding, err, ErrNotResumable)
	}
	n := st.Resumes + 1
	container := v1alpha1.DebugContainerName(s.Name, n)
	pod := st.DebugContainer.Pod
	// The claim comes first, at the version read: of two relays, one wins.
	beat := metav1.NewTime(now)
	why := fmt.Sprintf("its relay stopped (last heartbeat %s)", heartbeatOf(st))
	switch {
	case relayGone && st.Relay == r.Replica:
		why = fmt.Sprintf("its relay %s let go of it or restarted (last heartbeat %s)", orNone(st.Relay), heartbeatOf(st))
	case relayGone:
		why = fmt.Sprintf("its relay %s stopped renewing its presence (last heartbeat %s)", orNone(st.Relay), heartbeatOf(st))
	}
	gap := "output it had not yet written out (the last few seconds, or what it held while the store refused segments) is missing"
	if st.Released != nil {
		why = fmt.Sprintf("its relay released it at %s", st.Released.UTC().Format(time.RFC3339))
		gap = "that relay wrote out all it had read before it let go"
	}
	err := r.Lifecycle().Make(ctx, s, lifecycle.Move{Step: v1alpha1.StepResume, Actor: v1alpha1.PortalUsername,
		Reason: fmt.Sprintf("%s; resumed in debug container %s in pod %s", why, container, pod),
		Status: func(st *v1alpha1.SessionStatus) {
			st.Resumes, st.Heartbeat, st.Relay, st.Released = n, &beat, r.Replica, nil
		}})
	if apierrors.IsConflict(err) {
		return nil, fmt.Errorf("session %s: another relay resumed it first: %w", s.Name, ErrNotResumable)
	}
	if err != nil {
		return nil, fmt.Errorf("claiming session %s: %w", s.Name, err)
	}
	// The grant is as old as the session, so the authorizer holds it: it
	// is waited for (an access review or two per session, of a replica
	// taking up a hundred) only when the write is refused, as by an API
	// server that just started and is still filling its RBAC cache.
	err = r.addDebugContainerTo(ctx, s, pod, container)
	if apierrors.IsForbidden(err) {
		if werr := WaitGranted(ctx, r.Kube, s.Namespace, st.Grant.Role); werr != nil {
			return nil, errors.Join(err, werr)
		}
		err = r.addDebugContainerTo(ctx, s, pod, container)
	}
	if err != nil {
		return nil, err
	}
	// The recording's marker only once the debug container is in the pod:
	// a resume refused there, tried again, leaves no marker of a shell that
	// never ran.
	rec, err := recording.Resume(ctx, r.Store, recording.RefOf(r.Cluster, s), recording.Options{RetainUntil: now.Add(r.Retention), Clock: r.Clock},
		st.StartedAt.Time, fmt.Sprintf("%s resumed the session at %s in debug container %s: the shell before this ended with the relay that ran it; %s",
			lifecycle.RelayComponent, now.UTC().Format(time.RFC3339), container, gap))
	if err != nil {
		return nil, fmt.Errorf("the session's recording cannot be continued, so it is not resumed: %w", err)
	}
	if err := r.waitRunning(ctx, s.Namespace, pod, container); err != nil {
		return nil, err
	}
	// A take-up slow enough that its claim's heartbeat is past the let-go
	// mark is not run: another relay may take the session up from its
	// stale heartbeat before this one's first beat.
	if late := r.Clock.Now().Sub(beat.Time); MustLetGo(beat.Time, r.Clock.Now(), stale/staleBeats) {
		return nil, fmt.Errorf("session %s: its debug container %s ran %s after this relay's claim, too late to run it: it is left to be taken up again", s.Name, container, late.Round(time.Second))
	}
	live, err := r.attach(s, pod, container, rec)
	if err != nil {
		return nil, err
	}
	live.endAtGrantExpiry(st.Grant.ExpiresAt.Time)
	if err := r.note(ctx, v1alpha1.StepAttach, s, container); err != nil {
		detail := fmt.Sprintf("the resume failed: the attach could not be audited: %v", err)
		return nil, errors.Join(fmt.Errorf("auditing the attach: %w", err), live.finish(context.Background(), relayEnding(v1alpha1.EndDisconnect, detail, true)))
	}
	return live, nil
}

// Resumable says whether a relay may take s up now: Active with a running
// record, its relay gone, released or silent for stale, and within its
// hard stop and grant. The claim that follows settles which relay does.
func Resumable(s *v1alpha1.Session, now time.Time, stale time.Duration, relayGone bool) error {
	st := s.Status
	switch {
	case st.Phase != v1alpha1.PhaseActive || st.Grant == nil || st.DebugContainer == nil || st.StartedAt == nil || st.Deadline == nil:
		return fmt.Errorf("session %s is %s without a running record: %w", s.Name, st.Phase, ErrNotResumable)
	case st.Released == nil && !relayGone && st.Heartbeat != nil && now.Sub(st.Heartbeat.Time) < stale:
		return fmt.Errorf("session %s: its relay sent a heartbeat %s ago: %w", s.Name, now.Sub(st.Heartbeat.Time).Round(time.Second), ErrNotResumable)
	case !now.Before(st.Deadline.Time) || !now.Before(st.Grant.ExpiresAt.Time):
		return fmt.Errorf("session %s is past its hard stop or its grant: the sweeper ends it: %w", s.Name, ErrNotResumable)
	}
	return nil
}

func orNone(replica string) string {
	if replica == "" {
		return "(unnamed)"
	}
	return replica
}

func heartbeatOf(st v1alpha1.SessionStatus) string {
	if st.Heartbeat == nil {
		return "never"
	}
	return st.Heartbeat.UTC().Format(time.RFC3339)
}

// Release hands the session over, as a replica shutting down among others
// does instead of ending it: the attach is closed (so the shell ends, as it
// would with a killed relay), everything read from it is written out to
// the recording, and the Session is marked released, so another replica
// resumes it at once (Resume), without waiting for the heartbeat to go
// stale. Nothing is ended, recycled or revoked; the terminals are sent to
// reconnect. A release that cannot be written leaves the session to be
// taken up once its heartbeat is stale, with its recording written out
// all the same.
func (l *Live) Release(ctx context.Context) error {
	_, err := l.leave(releasing, func() error {
		l.mu.Lock() // the heartbeat writes l.Session under it
		name := orNone(l.Session.Status.Relay)
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

func (l *Live) release(ctx context.Context, why string, tell error) error {
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
		l.cancel()
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
	l.cancel()
	return errors.Join(errs...)
}
