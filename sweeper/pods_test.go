package sweeper

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// makePod is a pod created at t0+created, carrying the given ephemeral containers.
func makePod(name string, created time.Duration, labels map[string]string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels, CreationTimestamp: *at(created)}}
	for _, c := range containers {
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers,
			corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: c, Image: "debug"}})
	}
	return pod
}

// copyPod is session's copy, created at t0+1m.
func copyPod(session string) *corev1.Pod {
	return makePod(v1alpha1.DebugContainerPrefix+session, time.Minute, map[string]string{v1alpha1.SessionLabel: session})
}

// appPod is an app's pod created an hour before t0, debugged with containers.
func appPod(containers ...string) *corev1.Pod {
	return makePod("web-1", -time.Hour, map[string]string{"app": "web"}, containers...)
}

// makeSession is a 30-minute session on web-1 in phase, approved by bob
// at t0 unless Pending; Active (and later) sessions started at t0 with
// their deadline at t0+30m, without a heartbeat.
func makeSession(name string, mode v1alpha1.SessionMode, phase v1alpha1.SessionPhase, mut ...func(*v1alpha1.Session)) *v1alpha1.Session {
	w := sessiontest.Make("shop", name).Mode(mode)
	if phase != v1alpha1.PhasePending {
		w.Approved("bob", "", t0)
	}
	switch phase {
	case v1alpha1.PhaseActive, v1alpha1.PhaseEnded, v1alpha1.PhaseExpired:
		w.Started(t0).Heartbeat(time.Time{})
	}
	return w.Phase(phase).With(mut...).Obj()
}

func keep(s *v1alpha1.Session) { s.Status.Approval.KeepPod = true }

// makeGrant is session's grant created at t0+created with the TTL label ttl.
func makeGrant(session string, created time.Duration, ttl string) rbacv1.RoleBinding {
	return rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "breakglass-" + session, Namespace: "shop", CreationTimestamp: *at(created),
		Labels: map[string]string{v1alpha1.SessionLabel: session, v1alpha1.TTLLabel: ttl}}}
}

// known builds the facts of one session.
func known(s *v1alpha1.Session, grants ...rbacv1.RoleBinding) map[string]sessionFacts {
	return map[string]sessionFacts{s.Name: {session: s, grants: grants}}
}

func TestDecidePod(t *testing.T) {
	p := &PodSweeper{Grace: 30 * time.Second, NewPodGrace: 5 * time.Second}
	const active, approved = v1alpha1.PhaseActive, v1alpha1.PhaseApproved
	copyMode, live := v1alpha1.ModeCopy, v1alpha1.ModeLive
	g45 := makeGrant("s1", 0, "45m")
	g15 := makeGrant("s1", 0, "15m")
	deleting := makeGrant("s1", 0, "45m")
	deleting.DeletionTimestamp = at(time.Minute)
	liar := func(s *v1alpha1.Session) { s.Status.Deadline = at(24 * time.Hour) }
	// extendedBy gives the session an extension of d, decided at t0+25m.
	extendedBy := func(d time.Duration, decision v1alpha1.ExtensionDecision) func(*v1alpha1.Session) {
		return func(s *v1alpha1.Session) {
			s.Status.Extensions = append(s.Status.Extensions, v1alpha1.Extension{
				ExtensionRequest: v1alpha1.ExtensionRequest{Duration: metav1.Duration{Duration: d}, By: "alice", At: *at(24 * time.Minute)},
				Decision:         decision, DecidedBy: "carol", DecidedByID: "idp#carol", DecidedAt: *at(25 * time.Minute)})
			if decision == v1alpha1.ExtensionApproved {
				s.Status.Deadline = at(s.Status.Deadline.Sub(t0) + d)
			}
		}
	}
	long := func(s *v1alpha1.Session) {
		s.Spec.Duration.Duration = 75 * time.Minute
		s.Status.Deadline = at(75 * time.Minute)
	}
	// The grant an extension made at t0+25m (TTL to the new hard stop and grace).
	xGrant := makeGrant("s1", 25*time.Minute, "27m")
	xGrant.Name += "-x1"
	xLong := makeGrant("s1", 70*time.Minute, "47m")
	xLong.Name += "-x1"
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		facts       map[string]sessionFacts
		now         time.Duration
		wantDelete  bool
		wantWhy     string // a part of the reason given
		wantRequeue time.Duration
	}{
		// Copies.
		{name: "copy whose Session does not exist", pod: copyPod("s1"), now: 2 * time.Minute,
			wantDelete: true, wantWhy: "does not exist"},
		{name: "copy of an Ended session", pod: copyPod("s1"), facts: known(makeSession("s1", copyMode, v1alpha1.PhaseEnded), g45),
			now: 2 * time.Minute, wantDelete: true, wantWhy: "is Ended"},
		{name: "copy of a Denied session", pod: copyPod("s1"), facts: known(makeSession("s1", copyMode, v1alpha1.PhaseDenied), g45),
			now: 2 * time.Minute, wantDelete: true, wantWhy: "is Denied"},
		{name: "copy of an Expired session", pod: copyPod("s1"), facts: known(makeSession("s1", copyMode, v1alpha1.PhaseExpired), g45),
			now: 2 * time.Minute, wantDelete: true, wantWhy: "is Expired"},
		{name: "copy of an Ended session whose approver kept the pod: copies always go", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, v1alpha1.PhaseEnded, keep), g45), now: 2 * time.Minute, wantDelete: true, wantWhy: "is Ended"},
		{name: "copy of an Approved session with its grant: stands until the grant runs out", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, approved), g45), now: 2 * time.Minute, wantRequeue: 43 * time.Minute},
		{name: "copy of an Approved session without a grant", pod: copyPod("s1"), facts: known(makeSession("s1", copyMode, approved)),
			now: 2 * time.Minute, wantDelete: true, wantWhy: "holds no grant"},
		{name: "copy of a Pending session without a grant", pod: copyPod("s1"), facts: known(makeSession("s1", copyMode, v1alpha1.PhasePending)),
			now: 2 * time.Minute, wantDelete: true, wantWhy: "holds no grant"},
		{name: "copy of an Active session within its grant: until the hard stop and grace", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, active), g45), now: 2 * time.Minute, wantRequeue: 28*time.Minute + 30*time.Second},
		{name: "copy of an Active session whose grant was revoked", pod: copyPod("s1"), facts: known(makeSession("s1", copyMode, active)),
			now: 2 * time.Minute, wantDelete: true, wantWhy: "holds no grant"},
		{name: "deadline lies: a second before the grant runs out", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, active, liar), g15), now: 15*time.Minute - time.Second, wantRequeue: time.Second},
		{name: "deadline lies: the grant ran out", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, active, liar), g15), now: 15 * time.Minute, wantDelete: true, wantWhy: "grant of its Session s1 ran out"},
		{name: "start and deadline lie: the grant ran out", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, active, liar, func(s *v1alpha1.Session) { s.Status.StartedAt = at(23 * time.Hour) }), g15),
			now:   15 * time.Minute, wantDelete: true, wantWhy: "ran out"},
		{name: "a TTL beyond the policies' bound counts as 75m", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, approved), makeGrant("s1", 0, "3h")), now: 2 * time.Minute, wantRequeue: 73 * time.Minute},
		{name: "a copy never outlives the longest grant from its own creation",
			pod:   makePod("breakglass-s1", -10*time.Minute, map[string]string{v1alpha1.SessionLabel: "s1"}),
			facts: known(makeSession("s1", copyMode, approved), makeGrant("s1", 0, "75m")), now: 65 * time.Minute,
			wantDelete: true, wantWhy: "older than the longest grant"},
		{name: "an unreadable TTL has run out", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, approved), makeGrant("s1", 0, "forever")), now: 2 * time.Minute, wantDelete: true, wantWhy: "ran out"},
		{name: "a grant being deleted does not stand", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, approved), deleting), now: 2 * time.Minute, wantDelete: true, wantWhy: "holds no grant"},
		{name: "of two grants the later stands", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, approved), g15, g45), now: 20 * time.Minute, wantRequeue: 25 * time.Minute},
		{name: "an approved extension moves the hard stop the sweeper counts", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, active, extendedBy(20*time.Minute, v1alpha1.ExtensionApproved)), xGrant),
			now:   40 * time.Minute, wantRequeue: 10*time.Minute + 30*time.Second},
		{name: "an extended session past its new hard stop", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, active, extendedBy(20*time.Minute, v1alpha1.ExtensionApproved)), xGrant),
			now:   50*time.Minute + 30*time.Second, wantDelete: true, wantWhy: "past its hard stop"},
		{name: "a denied extension moves nothing", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, active, extendedBy(20*time.Minute, v1alpha1.ExtensionDenied)), g45),
			now:   31 * time.Minute, wantDelete: true, wantWhy: "past its hard stop"},
		{name: "an extended copy outlives the longest grant from its creation by the time added", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, active, long, extendedBy(40*time.Minute, v1alpha1.ExtensionApproved)), xLong),
			now:   100 * time.Minute, wantRequeue: 15*time.Minute + 30*time.Second},
		{name: "an extended copy is still bounded from its creation", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, active, long, extendedBy(40*time.Minute, v1alpha1.ExtensionApproved),
				liar, func(s *v1alpha1.Session) { s.Status.StartedAt = at(10 * time.Minute) }), xLong),
			now: 116 * time.Minute, wantDelete: true, wantWhy: "older than the longest grant"},
		{name: "a copy whose Session claims more extended time than any session has", pod: copyPod("s1"),
			facts: known(makeSession("s1", copyMode, active, extendedBy(100*time.Hour, v1alpha1.ExtensionApproved), liar), makeGrant("s1", 370*time.Minute, "75m")),
			now:   331 * time.Minute, wantDelete: true, wantWhy: "past its hard stop"},
		{name: "a new copy whose Session is not seen yet waits for the cache", pod: copyPod("s1"),
			now: time.Minute + 2*time.Second, wantRequeue: 3 * time.Second},
		{name: "a copy past its grace whose Session is not seen", pod: copyPod("s1"),
			now: time.Minute + 5*time.Second, wantDelete: true, wantWhy: "does not exist"},

		// Pods that carry a debug container.
		{name: "debug container whose Session was deleted", pod: appPod("breakglass-s1"), now: 2 * time.Minute,
			wantDelete: true, wantWhy: "does not exist"},
		{name: "debug container of an Ended session", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, v1alpha1.PhaseEnded)), now: 2 * time.Minute, wantDelete: true, wantWhy: "is Ended"},
		{name: "debug container of an Ended session whose approver kept the pod: stays for good", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, v1alpha1.PhaseEnded, keep)), now: 2 * time.Minute},
		{name: "the approver kept another pod", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, v1alpha1.PhaseEnded, keep, func(s *v1alpha1.Session) { s.Status.DebugContainer.Pod = "web-2" })),
			now:   2 * time.Minute, wantDelete: true, wantWhy: "is Ended"},
		{name: "keep the pod asked of a copy session", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", copyMode, v1alpha1.PhaseEnded, keep, func(s *v1alpha1.Session) { s.Status.DebugContainer.Pod = "web-1" })),
			now:   2 * time.Minute, wantDelete: true, wantWhy: "is Ended"},
		{name: "an Expired session keeps no pod", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, v1alpha1.PhaseExpired, keep)), now: 2 * time.Minute, wantDelete: true, wantWhy: "is Expired"},
		{name: "debug container of an Active session within its grant", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, active), g45), now: 2 * time.Minute, wantRequeue: 28*time.Minute + 30*time.Second},
		{name: "a resumed session's second debug container counts as the session's", pod: appPod("breakglass-s1", "breakglass-s1-r1"),
			facts: known(makeSession("s1", live, active), g45), now: 2 * time.Minute, wantRequeue: 28*time.Minute + 30*time.Second},
		{name: "debug container of an Active session past its hard stop and grace", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, active), g45), now: 30*time.Minute + 30*time.Second, wantDelete: true, wantWhy: "past its hard stop"},
		{name: "debug container of an Approved session being started", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, approved), g45), now: time.Minute, wantRequeue: 44 * time.Minute},
		{name: "debug container of an Approved session whose start failed and took the grant back", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, approved)), now: time.Minute, wantDelete: true, wantWhy: "holds no grant"},
		{name: "debug container of an Active session whose grant was revoked", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, active)), now: 2 * time.Minute, wantDelete: true, wantWhy: "holds no grant"},
		{name: "the relay revoked the grant of a kept pod and is recording the end", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, active, keep)), now: 2 * time.Minute, wantRequeue: 28*time.Minute + 30*time.Second},
		{name: "deadline lies: the debug container goes at the grant's TTL", pod: appPod("breakglass-s1"),
			facts: known(makeSession("s1", live, active, liar), g15), now: 15 * time.Minute, wantDelete: true, wantWhy: "ran out"},
		{name: "an old pod's new debug container gets no grace", pod: appPod("breakglass-s1"), now: 0,
			wantDelete: true, wantWhy: "does not exist"},
		{name: "an unrelated ephemeral container is no business of the sweeper", pod: appPod("debugger"), now: 2 * time.Minute},
		{name: "a kept container and a live one: the live one bounds the pod", pod: appPod("breakglass-old", "breakglass-s1"),
			facts: map[string]sessionFacts{
				"old": known(makeSession("old", live, v1alpha1.PhaseEnded, keep))["old"],
				"s1":  known(makeSession("s1", live, active), g45)["s1"],
			}, now: 2 * time.Minute, wantRequeue: 28*time.Minute + 30*time.Second},
		{name: "a kept container and one whose Session is gone", pod: appPod("breakglass-old", "breakglass-s1"),
			facts: known(makeSession("old", live, v1alpha1.PhaseEnded, keep)), now: 2 * time.Minute, wantDelete: true, wantWhy: "s1 does not exist"},
		{name: "a container named only the prefix", pod: appPod("breakglass-"), now: 2 * time.Minute, wantDelete: true, wantWhy: "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := p.decide(tc.pod, tc.facts, t0.Add(tc.now))
			if got.delete != tc.wantDelete || got.requeueIn != tc.wantRequeue || !strings.Contains(got.why, tc.wantWhy) {
				t.Errorf("decide = delete %v (%q) requeue %v; want delete %v (%q) requeue %v",
					got.delete, got.why, got.requeueIn, tc.wantDelete, tc.wantWhy, tc.wantRequeue)
			}
		})
	}
}

func TestPodClaims(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		wantClaims  []claim
		wantIndexed []string
	}{
		{name: "an app's pod", pod: appPod()},
		{name: "an unrelated ephemeral container", pod: appPod("debugger")},
		{name: "a copy", pod: copyPod("s1"), wantClaims: []claim{{session: "s1"}}, wantIndexed: []string{"s1"}},
		{name: "two debug containers and another", pod: appPod("breakglass-s1", "debugger", "breakglass-s2"),
			wantClaims:  []claim{{session: "s1", container: "breakglass-s1"}, {session: "s2", container: "breakglass-s2"}},
			wantIndexed: []string{"s1", "s2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podClaims(tc.pod); !reflect.DeepEqual(got, tc.wantClaims) {
				t.Errorf("podClaims = %+v, want %+v", got, tc.wantClaims)
			}
			if got := indexPodSessions(tc.pod); !reflect.DeepEqual(got, tc.wantIndexed) {
				t.Errorf("indexPodSessions = %v, want %v", got, tc.wantIndexed)
			}
			if got, want := isDebugged(tc.pod), tc.wantClaims != nil; got != want {
				t.Errorf("isDebugged = %v, want %v", got, want)
			}
		})
	}
}

func TestSlimPod(t *testing.T) {
	full := appPod("breakglass-s1", "debugger")
	full.UID, full.ResourceVersion = types.UID("u1"), "42"
	full.Labels[v1alpha1.SessionLabel] = "s1"
	full.Annotations = map[string]string{"note": "big"}
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	full.Spec.Containers = []corev1.Container{{Name: "web", Image: "web:1"}}
	full.Status.Phase = corev1.PodRunning
	full.DeletionTimestamp = at(time.Hour)

	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "u1", ResourceVersion: "42",
			CreationTimestamp: *at(-time.Hour), DeletionTimestamp: at(time.Hour), Labels: map[string]string{v1alpha1.SessionLabel: "s1"}},
		Spec: corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{
			{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "breakglass-s1"}}}},
	}
	got, err := slimPod(full)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("slimPod = %+v, %v; want %+v", got, err, want)
	}
	again, err := slimPod(got)
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("slimPod is not idempotent: %+v, %v", again, err)
	}
	if _, err := slimPod(appPod()); err != nil {
		t.Errorf("slimPod of a plain pod: %v", err)
	}
	other := &rbacv1.RoleBinding{}
	if got, err := slimPod(other); err != nil || got != any(other) {
		t.Errorf("slimPod of a non-pod = %v, %v; want it unchanged", got, err)
	}
}
