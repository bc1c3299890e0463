package sweeper_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// requested writes a request as the relay does: created by the portal, then
// Pending, or Approved by bob at approvedAt when that is not zero.
func requested(t testing.TB, ns, name string, approvedAt time.Time) *v1alpha1.Session {
	t.Helper()
	portal, s := newSession(t, ns, name, v1alpha1.ModeLive, "web-1", false)
	ctx := context.Background()
	s.Status.Phase = v1alpha1.PhasePending
	if !approvedAt.IsZero() {
		s.Status.Phase = v1alpha1.PhaseApproved
		s.Status.Approval = &v1alpha1.Approval{By: "bob", At: metav1.NewTime(approvedAt), Mode: v1alpha1.ModeLive}
	}
	if err := portal.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func phaseIs(s *v1alpha1.Session, want v1alpha1.SessionPhase) func() (bool, error) {
	return func() (bool, error) {
		cur := &v1alpha1.Session{}
		err := cl.Client.Get(context.Background(), clientKey(s), cur)
		return err == nil && cur.Status.Phase == want, err
	}
}

// stillIn fails if s has left phase want by the time the sweeper has gone
// back to waiting on fake.
func stillIn(t *testing.T, fake *clocktesting.FakeClock, s *v1alpha1.Session, want v1alpha1.SessionPhase) {
	t.Helper()
	waitForWaiter(t, fake)
	if ok, err := phaseIs(s, want)(); err != nil || !ok {
		t.Fatalf("session %s left %s too early (%v)", s.Name, want, err)
	}
}

// TestRequestsAndApprovalsExpire: a request nobody decides on expires an hour
// after it was made, an approval nobody uses 30 minutes after it was given,
// each at that moment on the sweeper's clock, written as the sweeper's own
// account through the Session policy.
func TestRequestsAndApprovalsExpire(t *testing.T) {
	ns := namespace(t, "expiry")
	pending := requested(t, ns, "s-pending", time.Time{})
	created := pending.CreationTimestamp.Time
	approved := requested(t, ns, "s-approved", created.Add(50*time.Minute))

	fake := clockAt(created)
	startSweeper(t, sweeper.Options{Clock: fake, PendingFor: time.Hour, ApprovedFor: 30 * time.Minute})

	fake.Step(59 * time.Minute)
	stillIn(t, fake, pending, v1alpha1.PhasePending)
	fake.Step(time.Minute)
	cluster.Eventually(t, 20*time.Second, "the request expired an hour after it was made", phaseIs(pending, v1alpha1.PhaseExpired))
	stillIn(t, fake, approved, v1alpha1.PhaseApproved)

	fake.Step(20*time.Minute - time.Second) // 50m + 30m, less a second
	stillIn(t, fake, approved, v1alpha1.PhaseApproved)
	fake.Step(time.Second)
	cluster.Eventually(t, 20*time.Second, "the approval expired 30 minutes after it was given", phaseIs(approved, v1alpha1.PhaseExpired))
}
