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
// lapsed or was deleted): the heartbeat is then not waited for. The
// terminal is handed back attached, its output shown on screen; the caller
// audits the attach and runs the session from there (relay/live).
func (r *Runner) Resume(ctx context.Context, s *v1alpha1.Session, stale time.Duration, relayGone bool, screen Screen) (*Stream, error) {
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
		why = fmt.Sprintf("its relay %s let go of it or restarted (last heartbeat %s)", ReplicaName(st.Relay), heartbeatOf(st))
	case relayGone:
		why = fmt.Sprintf("its relay %s stopped renewing its presence (last heartbeat %s)", ReplicaName(st.Relay), heartbeatOf(st))
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
	return r.attach(s, pod, container, rec, screen)
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

// ReplicaName is how the audit log and the Session's reasons name a relay
// replica: a relay that runs alone has no name.
func ReplicaName(replica string) string {
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
