package live

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/relay/debugsession"
)

// AskExtension records the requester's ask for d more with reason, for
// another person to decide. Nothing else changes until then: the hard stop
// and the grant stay as they are.
func (l *Session) AskExtension(ctx context.Context, by, byID string, d time.Duration, reason string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, now := l.Session, l.r.Clock.Now()
	if err := l.extensible(now); err != nil {
		return err
	}
	if q := s.Status.ExtensionRequest; q != nil {
		return debugsession.RefuseExtension("%s asked for %s more at %s: that waits for a decision first", q.By, q.Duration.Duration, q.At.UTC().Format(time.RFC3339))
	}
	if _, _, err := l.r.PlanExtension(s, d, now); err != nil {
		return err
	}
	ask := &v1alpha1.ExtensionRequest{Duration: metav1.Duration{Duration: d}, Reason: reason, By: by, ByID: byID, At: metav1.NewTime(now)}
	return l.r.Lifecycle().Make(ctx, s, lifecycle.Move{Step: v1alpha1.StepExtendRequest, Actor: by,
		Reason: fmt.Sprintf("%s more: %s", d, reason),
		Status: func(st *v1alpha1.SessionStatus) { st.ExtensionRequest = ask }})
}

// DecideExtension approves or denies the extension asked for, as by (never
// the requester). An approval replaces the grant with a new RoleBinding
// whose TTL covers the new hard stop (a grant's TTL is never stretched in
// place, and the new one is within the same bounds as any), moves the hard
// stop, and only then deletes the grant it replaced. The terminal and its
// recording go on in one piece.
func (l *Session) DecideExtension(ctx context.Context, by, byID string, approve bool, comment string) error {
	// Bounded: the heartbeat and the limits wait on l.mu meanwhile.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	s, now := l.Session, l.r.Clock.Now()
	if err := l.extensible(now); err != nil {
		return err
	}
	// A replica that lost the session to another (which has not yet told
	// it) must not decide: it would replace the grant the other runs on.
	fresh := &v1alpha1.Session{}
	if err := l.r.Client.Get(ctx, client.ObjectKeyFromObject(s), fresh); err != nil {
		return fmt.Errorf("reading the session before deciding: %w", err)
	}
	if fresh.Status.Resumes != s.Status.Resumes || fresh.Status.Phase != v1alpha1.PhaseActive {
		return debugsession.RefuseExtension("the session moved to another relay or ended a moment ago: reload and decide again")
	}
	q := s.Status.ExtensionRequest
	switch {
	case q == nil:
		return debugsession.RefuseExtension("no extension is asked for")
	case s.IsRequester(by, byID) || v1alpha1.SamePerson(q.By, q.ByID, by, byID):
		return debugsession.RefuseExtension("%s asked for this extension: another person decides on it", by)
	}
	decided := v1alpha1.Extension{ExtensionRequest: *q, DecidedBy: by, DecidedByID: byID, DecidedAt: metav1.NewTime(now), Comment: comment}
	if !approve {
		decided.Decision = v1alpha1.ExtensionDenied
		return l.r.Lifecycle().Make(ctx, s, lifecycle.Move{Step: v1alpha1.StepExtendDeny, Actor: by,
			Reason: fmt.Sprintf("%s more, asked by %s: denied: %s", q.Duration.Duration, q.By, comment),
			Status: func(st *v1alpha1.SessionStatus) {
				st.Extensions, st.ExtensionRequest = append(st.Extensions, decided), nil
			}})
	}
	at, ttl, err := l.r.PlanExtension(s, q.Duration.Duration, now)
	if err != nil {
		return err
	}
	old := *s.Status.Grant
	deadline := metav1.NewTime(at)
	_, approved := s.Extended()
	grant, err := l.r.Regrant(ctx, s, approved+1, old.Role, ttl, old.RoleBinding)
	if err != nil {
		return err
	}
	decided.Decision, decided.Grant, decided.Deadline = v1alpha1.ExtensionApproved, grant.Name, &deadline
	next := &v1alpha1.Grant{RoleBinding: grant.Name, Role: old.Role, ExpiresAt: metav1.NewTime(now.Add(ttl))}
	if err := l.r.Lifecycle().Make(ctx, s, lifecycle.Move{Step: v1alpha1.StepExtend, Actor: by,
		Reason: fmt.Sprintf("%s more, asked by %s: the hard stop moves to %s; grant %s replaces %s", q.Duration.Duration, q.By,
			deadline.UTC().Format(time.RFC3339), grant.Name, old.RoleBinding),
		Status: func(st *v1alpha1.SessionStatus) {
			st.Extensions, st.ExtensionRequest = append(st.Extensions, decided), nil
			st.Grant, st.Deadline = next, &deadline
		}}); err != nil {
		_ = l.r.Client.Delete(context.WithoutCancel(ctx), grant)
		return err
	}
	l.moveStopLocked()
	// The new grant stands; the old one goes now rather than at its TTL.
	if err := l.r.Revoke(context.WithoutCancel(ctx), s.Namespace, old.RoleBinding); err != nil {
		l.r.Log.Error(err, "deleting the grant an extension replaced (the grant sweeper deletes it at its TTL)", "grant", old.RoleBinding)
	}
	return nil
}

// extensible says whether an extension may be asked for or decided now:
// while the session runs here and before its hard stop. Call under l.mu.
func (l *Session) extensible(now time.Time) error {
	if l.Ending() {
		return debugsession.RefuseExtension("the session is ending")
	}
	return debugsession.Extensible(l.Session, now)
}
