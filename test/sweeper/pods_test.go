package sweeper_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// appImage is the copied app's image, pinned by digest as a copy requires.
var appImage = "registry.example/shop/web@sha256:" + strings.Repeat("a", 64)

// makeCopy is a copy pod for session, built as the relay builds one
// (sessionobjects.CopyPod) from an app pod on node-1, for the longest grant.
func makeCopy(t testing.TB, ns, session string) *corev1.Pod {
	t.Helper()
	app := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:        "node-1",
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
			Containers:      []corev1.Container{{Name: "web", Image: appImage}},
		},
	}
	s := sessiontest.Make(ns, session).Mode(v1alpha1.ModeCopy).Obj()
	cp, err := sessionobjects.CopyPod(app, s, v1alpha1.DebugContainerPrefix+session, cluster.DebugImage, false, 45*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// portalCopy creates session's copy as the portal, which must hold a grant in ns.
func portalCopy(t testing.TB, ns, session string) *corev1.Pod {
	t.Helper()
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	cp := makeCopy(t, ns, session)
	if err := portal.Client.Create(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
	return cp
}

// endSession records, as the portal (the relay), that s ended at its user's word.
func endSession(t testing.TB, s *v1alpha1.Session, at time.Time) {
	t.Helper()
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	s.Status.Phase = v1alpha1.PhaseEnded
	s.Status.End = &v1alpha1.End{By: v1alpha1.PortalUsername, Reason: v1alpha1.EndUser, At: metav1.NewTime(at)}
	if err := portal.Client.Status().Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// stillThere fails the test unless obj exists after a moment in which the
// sweeper had every chance to act on it.
func stillThere(t testing.TB, obj *corev1.Pod, why string) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	if !exists(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: obj.Name, Namespace: obj.Namespace}}) {
		t.Fatalf("pod %s was deleted: %s", obj.Name, why)
	}
}

// TestCopyWithoutSessionDeleted: a copy whose Session does not exist is
// deleted, once it is older than the grace given to a new pod, although a
// grant for that session stands.
func TestCopyWithoutSessionDeleted(t *testing.T) {
	ns := namespace(t, "pods-nosession")
	grant(t, ns, "gone", "45m")
	cp := portalCopy(t, ns, "gone")
	fake := clockAt(cp.CreationTimestamp.Time)
	startSweeper(t, sweeper.Options{Clock: fake, NewPodGrace: 5 * time.Second})
	waitForWaiter(t, fake)
	stillThere(t, cp, "a brand-new copy gets a grace for its Session to show")

	fake.Step(5 * time.Second)
	cluster.Eventually(t, 20*time.Second, "the copy without a Session deleted", gone(cp))
}

// TestCopyOfEndedSessionDeleted: a copy that turns up after its session
// ended, and after the sweeper finished that session's clean-up, is deleted.
func TestCopyOfEndedSessionDeleted(t *testing.T) {
	ns := namespace(t, "pods-ended")
	rb := grant(t, ns, "done", "45m")
	started := rb.CreationTimestamp.Time
	s := activeSession(t, ns, "done", v1alpha1.ModeCopy, "breakglass-done", started, false)
	endSession(t, s, started.Add(5*time.Minute))

	fake := clockAt(time.Now().Add(time.Hour))
	startSweeper(t, sweeper.Options{Clock: fake})
	cluster.Eventually(t, 20*time.Second, "the ended session's grant deleted", gone(rb))

	// Only the pod sweeper sees this one: the Session's clean-up is over.
	cp := makeCopy(t, ns, "done")
	if err := cl.Client.Create(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 20*time.Second, "the late copy of an ended session deleted", gone(cp))
}

// TestCopyOfActiveSessionStays: the copy of an Active session within its
// grant stays, right up to the session's hard stop and the relay's grace.
func TestCopyOfActiveSessionStays(t *testing.T) {
	ns := namespace(t, "pods-active")
	rb := grant(t, ns, "live", "45m")
	cp := portalCopy(t, ns, "live")
	started := rb.CreationTimestamp.Time
	activeSession(t, ns, "live", v1alpha1.ModeCopy, cp.Name, started, false)

	fake := clockAt(started.Add(time.Minute))
	// A heartbeat that never goes stale keeps the Session sweeper out of it.
	startSweeper(t, sweeper.Options{Clock: fake, HeartbeatTimeout: 24 * time.Hour, Grace: 30 * time.Second})
	waitForWaiter(t, fake)
	stillThere(t, cp, "its session is Active and its grant stands")

	fake.Step(29*time.Minute + 29*time.Second) // a second before the hard stop's grace runs out
	stillThere(t, cp, "its session's hard stop and grace have not passed")

	waitForWaiter(t, fake)
	fake.Step(time.Second)
	cluster.Eventually(t, 20*time.Second, "the copy deleted at the hard stop and grace", gone(cp))
}

// TestDebuggedPodWithoutSessionRecycled: the cluster keeps an Active
// Session from being deleted; a pod whose debug container names a Session
// that is not there (never written, or gone with a policy that was) is
// recycled, while its grant is left to its own TTL.
func TestDebuggedPodWithoutSessionRecycled(t *testing.T) {
	ns := namespace(t, "pods-deleted")
	pod := appPod(t, ns, "web-1")
	rb := grant(t, ns, "x", "45m")
	addDebugContainer(t, ns, pod.Name, "breakglass-x")
	started := rb.CreationTimestamp.Time
	s := activeSession(t, ns, "x", v1alpha1.ModeLive, pod.Name, started, false)

	fake := clockAt(started.Add(time.Minute))
	startSweeper(t, sweeper.Options{Clock: fake, HeartbeatTimeout: 24 * time.Hour})
	waitForWaiter(t, fake)
	stillThere(t, pod, "its session is Active and its grant stands")

	err := cl.Client.Delete(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "[session.delete]") {
		t.Fatalf("want the cluster to keep an Active Session, got %v", err)
	}

	other := appPod(t, ns, "web-2")
	ghost := grant(t, ns, "ghost", "45m")
	addDebugContainer(t, ns, other.Name, "breakglass-ghost")
	fake.Step(10 * time.Second) // past the grace a new pod's Session has to show
	cluster.Eventually(t, 20*time.Second, "the pod of a Session that is not there recycled", gone(other))
	if !exists(ghost) {
		t.Fatal("the grant went too: the pod was not recycled for its Session alone")
	}
	stillThere(t, pod, "its session is still Active")
}

// TestLyingDeadlineRecycledAtGrantTTL: an Active session whose deadline
// (and grant record) say a day, with a 15m grant: the pod is recycled at
// the grant's TTL, not a second before, while the Session still says Active.
func TestLyingDeadlineRecycledAtGrantTTL(t *testing.T) {
	ns := namespace(t, "pods-liar")
	pod := appPod(t, ns, "web-1")
	rb := grant(t, ns, "liar", "15m")
	addDebugContainer(t, ns, pod.Name, "breakglass-liar")
	started := rb.CreationTimestamp.Time
	// The deadline and the grant's recorded expiry say a day; the grant's TTL label says 15m.
	s := startedSession(t, ns, "liar", v1alpha1.ModeLive, pod.Name, started, started.Add(24*time.Hour), false)

	fake := clockAt(started)
	startSweeper(t, sweeper.Options{Clock: fake, HeartbeatTimeout: 48 * time.Hour})
	waitForWaiter(t, fake)
	fake.Step(15*time.Minute - time.Second)
	stillThere(t, pod, "a second before its grant's TTL")

	waitForWaiter(t, fake)
	fake.Step(time.Second)
	cluster.Eventually(t, 20*time.Second, "the pod recycled at the grant's TTL", gone(pod))
	got := &v1alpha1.Session{}
	if err := cl.Client.Get(context.Background(), clientKey(s), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.PhaseActive {
		t.Fatalf("the session is %s: the pod went with the session, not at the grant's TTL", got.Status.Phase)
	}
}

// TestUnrelatedPodsUntouched: pods the plane never debugged stay, however
// their containers are named, while a debugged pod beside them without a
// Session is recycled (so the sweeper did run).
func TestUnrelatedPodsUntouched(t *testing.T) {
	ns := namespace(t, "pods-unrelated")
	untouched := []*corev1.Pod{appPod(t, ns, "web-1")}
	// On Flight the policies refuse any ephemeral container not named
	// breakglass-, even the cluster admin's; if they ever admit one, the
	// sweeper must leave it alone all the same.
	admin, err := cl.As("ops-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	err = admin.AddDebugContainer(context.Background(), ns, "web-1", sessionobjects.DebugContainer("debugger", cluster.DebugImage))
	if err != nil && !strings.Contains(err.Error(), "breakglass-debug-container") {
		t.Fatalf("adding an unrelated ephemeral container: %v", err)
	}
	// A regular container named like a debug container is refused outright
	// (names.reserved), so it can never pass for a debugged pod.
	tools := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "tools-1", Namespace: ns, Labels: map[string]string{"app": "tools"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "breakglass-tools", Image: "registry.example/tools:1"}}},
	}
	if err := cl.Client.Create(context.Background(), tools); err == nil || !strings.Contains(err.Error(), "[names.reserved]") {
		t.Fatalf("want a pod with a container named breakglass-tools refused, got %v", err)
	}

	control := appPod(t, ns, "web-2")
	grant(t, ns, "ctl", "45m")
	addDebugContainer(t, ns, control.Name, "breakglass-ctl")

	fake := clockAt(time.Now().Add(time.Hour))
	startSweeper(t, sweeper.Options{Clock: fake})
	cluster.Eventually(t, 20*time.Second, "the debugged pod without a Session recycled", gone(control))
	for _, p := range untouched {
		stillThere(t, p, "the plane never debugged it")
	}
}
