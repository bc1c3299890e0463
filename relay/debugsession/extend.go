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
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
)

// ExtensionLimits bound one session's extensions, as the cluster's Session
// policy does with the chart's params (extensions.max, extensions.maxTotal):
// the relay refuses in its own words what the cluster would refuse anyway.
type ExtensionLimits struct {
	// Max is how many extensions a session may be given.
	Max int
	// MaxTotal is the longest a session may run, from its start to its
	// last hard stop.
	MaxTotal time.Duration
}

// ErrExtension is an extension the session's state or limits refuse: the
// person can do something about it (wait, ask for less, decide the one
// waiting), so it is a conflict, never a failure of the plane.
var ErrExtension = errors.New("extension refused")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrExtension, fmt.Sprintf(format, args...))
}

// AskExtension records the requester's ask for d more with reason, for
// another person to decide. Nothing else changes until then: the hard stop
// and the grant stay as they are.
func (l *Live) AskExtension(ctx context.Context, by, byID string, d time.Duration, reason string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, now := l.Session, l.r.Clock.Now()
	if err := l.extensible(now); err != nil {
		return err
	}
	if q := s.Status.ExtensionRequest; q != nil {
		return refused("%s asked for %s more at %s: that waits for a decision first", q.By, q.Duration.Duration, q.At.UTC().Format(time.RFC3339))
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
func (l *Live) DecideExtension(ctx context.Context, by, byID string, approve bool, comment string) error {
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
		return refused("the session moved to another relay or ended a moment ago: reload and decide again")
	}
	q := s.Status.ExtensionRequest
	switch {
	case q == nil:
		return refused("no extension is asked for")
	case s.IsRequester(by, byID) || v1alpha1.SamePerson(q.By, q.ByID, by, byID):
		return refused("%s asked for this extension: another person decides on it", by)
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
	grant := sessionobjects.Grant(s.Namespace, v1alpha1.ExtensionGrantName(s.Name, approved+1), s.Name, old.Role, ttl.String())
	// One left from an approval whose status write failed is this
	// session's, made by this relay: replaced, so its TTL counts from now.
	if err := l.r.Client.Delete(ctx, grant); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clearing an earlier extension grant %s: %w", grant.Name, err)
	}
	if err := l.r.Client.Create(ctx, grant); err != nil {
		return fmt.Errorf("granting the extension: %w", err)
	}
	if err := l.r.note(ctx, v1alpha1.StepGrant, s, fmt.Sprintf("%s for %s, replacing %s at an extension", old.Role, ttl, old.RoleBinding)); err != nil {
		_ = l.r.Client.Delete(context.WithoutCancel(ctx), grant)
		return fmt.Errorf("auditing the extension's grant: %w", err)
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
	gone := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: old.RoleBinding, Namespace: s.Namespace}}
	if err := l.r.Client.Delete(context.WithoutCancel(ctx), gone); err != nil && !apierrors.IsNotFound(err) {
		l.r.Log.Error(err, "deleting the grant an extension replaced (the grant sweeper deletes it at its TTL)", "grant", old.RoleBinding)
	}
	return nil
}

// Snapshot is a copy of the Session as this relay last wrote or read it.
func (l *Live) Snapshot() *v1alpha1.Session {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Session.DeepCopy()
}

// extensible says whether an extension may be asked for or decided now:
// while the session runs here and before its hard stop. Call under l.mu.
func (l *Live) extensible(now time.Time) error {
	if l.Ending() {
		return refused("the session is ending")
	}
	return Extensible(l.Session, now)
}

// Extensible says whether a session may be given more time now, as far as
// its record tells: running, before its hard stop, and in a mode whose
// pod can live longer.
func Extensible(s *v1alpha1.Session, now time.Time) error {
	switch {
	case s.Status.Phase != v1alpha1.PhaseActive || s.Status.Deadline == nil || s.Status.Grant == nil || s.Status.StartedAt == nil:
		return refused("the session is %s, not running", s.Status.Phase)
	case !now.Before(s.Status.Deadline.Time):
		return refused("the session is past its hard stop")
	case s.Spec.Mode == v1alpha1.ModeHeldCopy:
		return refused("a held copy's app containers are held only for the time first asked for: request a new session")
	case s.Spec.Mode == v1alpha1.ModeCopy:
		// Its node ends the copy at its first grant's TTL
		// (activeDeadlineSeconds), which only ever shortens.
		return refused("a copy lives no longer than the grant it was made under, and its node ends it then: request a new session")
	}
	return nil
}

// PlanExtension checks d more for a running session against its limits
// now (how many extensions, how long in all, and a grant that can cover
// the new hard stop from now within the longest TTL the policies allow),
// and gives the new hard stop and the TTL of the grant that covers it.
func (r *Runner) PlanExtension(s *v1alpha1.Session, d time.Duration, now time.Time) (deadline time.Time, ttl time.Duration, err error) {
	_, approved := s.Extended()
	if approved >= r.Extensions.Max {
		return deadline, 0, refused("a session may be extended %d time(s), and this one has been", r.Extensions.Max)
	}
	if d < v1alpha1.MinExtension || d%time.Second != 0 {
		return deadline, 0, refused("ask for at least %s, in whole seconds, not %s", v1alpha1.MinExtension, d)
	}
	deadline = s.Status.Deadline.Add(d)
	if total := deadline.Sub(s.Status.StartedAt.Time); total > r.Extensions.MaxTotal {
		return deadline, 0, refused("a session runs at most %s in all: %s more would make it %s", r.Extensions.MaxTotal, d, total)
	}
	if ttl = r.extensionTTL(deadline, now); ttl > r.MaxTTL {
		room := r.MaxTTL - r.Grace - s.Status.Deadline.Sub(now)
		return deadline, 0, refused("the new grant would need %s, more than the %s a grant may last: ask for at most %s now, or later", ttl, r.MaxTTL, room.Truncate(time.Minute))
	}
	return deadline, ttl, nil
}

// StartTTL is the TTL of a session's first grant: its duration and the
// grace after its hard stop, within the longest the policies allow.
func (r *Runner) StartTTL(s *v1alpha1.Session) time.Duration {
	return min(s.Spec.Duration.Duration+r.Grace, r.MaxTTL)
}

// extensionTTL is the TTL of a grant made now that covers a hard stop at
// deadline and the grace after it: whole seconds (the TTL label is a
// duration such as 47m12s), and never under the 15 minutes any grant lasts.
func (r *Runner) extensionTTL(deadline, now time.Time) time.Duration {
	ttl := (deadline.Sub(now) + r.Grace + time.Second - 1).Truncate(time.Second)
	return max(ttl, 15*time.Minute)
}
