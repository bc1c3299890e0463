// Package sweeper is the fence that does not trust the relay: it deletes
// every session grant when its TTL runs out, finishes sessions the relay
// abandoned, recycles pods that still carry a debug container of an ended
// session, and tells the fallback reviewer when a glass-broken session's
// review is overdue. All of its state is read from the cluster, so a restart
// or a failover loses nothing.
package sweeper

import (
	"context"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/lifecycle"
)

// GrantExpiry is when a grant's TTL runs out: its creation time plus the
// duration in its TTL label, as Kyverno's cleanup controller reads
// cleanup.kyverno.io/ttl. A grant without a readable TTL has no business
// standing, so it expires at once (ok is false).
func GrantExpiry(rb *rbacv1.RoleBinding) (expiry time.Time, ok bool) {
	d, err := time.ParseDuration(rb.Labels[v1alpha1.TTLLabel])
	if err != nil || d <= 0 {
		return rb.CreationTimestamp.Time, false
	}
	return rb.CreationTimestamp.Add(d), true
}

// GrantDue is the grant sweeper's whole judgement on a session grant at
// now: delete it (its TTL ran out, or it has none readable), or look again
// in requeueIn, the moment it runs out. Nothing else wakes the sweeper for
// a grant that stands unchanged.
func GrantDue(rb *rbacv1.RoleBinding, now time.Time) (expired bool, requeueIn time.Duration) {
	expiry, readable := GrantExpiry(rb)
	if readable && now.Before(expiry) {
		return false, expiry.Sub(now)
	}
	return true, 0
}

// GrantSweeper deletes session grants whose TTL has run out, and requeues
// each one for exactly the moment it runs out.
type GrantSweeper struct {
	Client client.Client
	Clock  clock.PassiveClock
	// Expired, when set, is told of each grant deleted and how late.
	Expired func(rb *rbacv1.RoleBinding, late time.Duration)
	Audit   *audit.Log
	// Identity names the sweeper in the audit log.
	Identity string
}

// Reconcile handles one RoleBinding that carries a session label.
func (g *GrantSweeper) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rb := &rbacv1.RoleBinding{}
	if err := g.Client.Get(ctx, req.NamespacedName, rb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if _, ok := rb.Labels[v1alpha1.SessionLabel]; !ok || !rb.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	now := g.Clock.Now()
	if expired, in := GrantDue(rb, now); !expired {
		return ctrl.Result{RequeueAfter: in}, nil
	}
	expiry, _ := GrantExpiry(rb)
	takeAway(ctx, g.Audit, v1alpha1.StepRevoke, g.Identity, rb.Namespace, rb.Labels[v1alpha1.SessionLabel],
		fmt.Sprintf("grant %s (ttl %s) expired at %s", rb.Name, rb.Labels[v1alpha1.TTLLabel], expiry.UTC().Format(time.RFC3339)))
	// The UID precondition keeps a grant re-created under the same name safe.
	uid := rb.UID
	err := g.Client.Delete(ctx, rb, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("deleting expired grant %s/%s: %w", rb.Namespace, rb.Name, err)
	}
	log.FromContext(ctx).Info("deleted an expired grant", "grant", req.NamespacedName,
		"session", rb.Labels[v1alpha1.SessionLabel], "ttl", rb.Labels[v1alpha1.TTLLabel], "expired", expiry)
	if err == nil {
		grantLateness.Observe(now.Sub(expiry).Seconds())
	}
	if g.Expired != nil && err == nil {
		g.Expired(rb, now.Sub(expiry))
	}
	return ctrl.Result{}, nil
}

// takeAway audits a step the sweeper takes on its own to remove a
// session's access (a grant revoked, a pod recycled), through the
// lifecycle as every step about a session is. Taking access away never
// waits on the audit log: a failure to audit it is logged, and the step
// goes ahead.
func takeAway(ctx context.Context, l *audit.Log, kind, actor, namespace, session, reason string) {
	m := lifecycle.Machine{Writer: v1alpha1.WriterSweeper, Component: actor, Audit: l}
	if err := m.NoteAbout(ctx, kind, actor, namespace, session, reason); err != nil {
		log.FromContext(ctx).Error(err, "auditing a step that takes access away; it goes ahead", "kind", kind, "session", namespace+"/"+session)
	}
}
