package sweeper_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// running is a sweeper started for one test.
type running struct {
	mgr      manager.Manager
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
	err      error // what Start returned
}

// startSweeper runs a sweeper as the sweeper's ServiceAccount until the test
// ends (or stop is called).
func startSweeper(t testing.TB, opts sweeper.Options) *running {
	t.Helper()
	sa, err := cl.Sweeper()
	if err != nil {
		t.Fatal(err)
	}
	opts.SeveralInOneProcess = true
	mgr, err := sweeper.New(sa.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{mgr: mgr, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		r.stop()
		if r.err != nil {
			t.Errorf("the sweeper stopped with: %v", r.err)
		}
	})
	return r
}

// stop stops the sweeper and waits for it; a second call does nothing.
func (r *running) stop() {
	r.stopOnce.Do(func() {
		r.cancel()
		select {
		case r.err = <-r.done:
		case <-time.After(30 * time.Second):
			r.err = errors.New("the sweeper did not stop within 30s")
		}
	})
}

func namespace(t testing.TB, name string) string { return cl.Namespace(t, name) }

// grant makes a session grant as the portal and returns it as stored.
func grant(t testing.TB, ns, session, ttl string) *rbacv1.RoleBinding {
	t.Helper()
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	rb := cluster.ProbeGrant(session, ttl)
	rb.Namespace = ns
	if err := portal.Client.Create(context.Background(), rb); err != nil {
		t.Fatal(err)
	}
	if err := portal.WaitAllowed(context.Background(), ns, "patch", "pods", "ephemeralcontainers"); err != nil {
		t.Fatal(err)
	}
	return rb
}

// clockAt is a fake clock at t.
func clockAt(at time.Time) *clocktesting.FakeClock { return clocktesting.NewFakeClock(at) }

// waitForWaiter waits until something (a requeue) waits on the fake clock.
func waitForWaiter(t testing.TB, c *clocktesting.FakeClock) {
	t.Helper()
	cluster.Eventually(t, 20*time.Second, "the sweeper waits on the clock", func() (bool, error) { return c.HasWaiters(), nil })
}

// gone is true once obj is deleted: gone, or terminating (a pod bound to a
// node waits for a kubelet this cluster does not run).
func gone(obj client.Object) func() (bool, error) {
	return func() (bool, error) {
		err := cl.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && obj.GetDeletionTimestamp() != nil, err
	}
}

func exists(obj client.Object) bool {
	return cl.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj) == nil
}

// appPod is a running app's pod.
func appPod(t testing.TB, ns, name string) *corev1.Pod { return cl.AppPod(t, ns, name) }

// addDebugContainer adds a compliant debug container as the portal, which
// must hold a grant in ns.
func addDebugContainer(t testing.TB, ns, pod, name string) {
	t.Helper()
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	if err := portal.AddDebugContainer(context.Background(), ns, pod, cluster.DebugContainer(name, cluster.DebugImage)); err != nil {
		t.Fatal(err)
	}
}

// activeSession writes an Active Session as the relay would: requested,
// approved by bob, started at `started` with the relay's heartbeat then and
// its hard stop 30 minutes later.
func activeSession(t testing.TB, ns, name string, mode v1alpha1.SessionMode, pod string, started time.Time, keepPod bool) *v1alpha1.Session {
	t.Helper()
	return startedSession(t, ns, name, mode, pod, started, started.Add(30*time.Minute), keepPod)
}

// startedSession writes an Active Session as the portal, through the phases
// the Session policy lets it take (new, Approved, Active), with deadline as
// its hard stop and its grant's recorded expiry: true or not, as a relay
// (or a stolen portal token) wrote them.
func startedSession(t testing.TB, ns, name string, mode v1alpha1.SessionMode, pod string, started, deadline time.Time, keepPod bool) *v1alpha1.Session {
	t.Helper()
	portal, s := newSession(t, ns, name, mode, pod, keepPod)
	ctx := context.Background()
	start := metav1.NewTime(started)
	s.Status = v1alpha1.SessionStatus{
		Phase:    v1alpha1.PhaseApproved,
		Approval: &v1alpha1.Approval{By: "bob", At: start, Mode: mode, KeepPod: keepPod},
	}
	if err := portal.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	stop := metav1.NewTime(deadline)
	s.Status.Phase = v1alpha1.PhaseActive
	s.Status.Grant = &v1alpha1.Grant{RoleBinding: "breakglass-" + name, Role: v1alpha1.DebugRole, ExpiresAt: stop}
	s.Status.DebugContainer = &v1alpha1.DebugContainer{Pod: pod, Name: "breakglass-" + name, Image: cluster.DebugImage}
	s.Status.StartedAt, s.Status.Deadline, s.Status.Heartbeat = &start, &stop, &start
	if err := portal.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// newSession creates alice's 30-minute request on pod as the portal, which
// it returns too, for the status writes that follow.
func newSession(t testing.TB, ns, name string, mode v1alpha1.SessionMode, pod string, keepPod bool) (*cluster.User, *v1alpha1.Session) {
	t.Helper()
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	s := sessiontest.Make(ns, name).Pod(pod).Mode(mode).KeepPod(keepPod).Obj()
	if err := portal.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return portal, s
}

func clientKey(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }
