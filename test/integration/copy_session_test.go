package integration

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/cluster"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func copyPod(ns string) *corev1.Pod {
	ec := debugContainer("breakglass-s1")
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1-copy", Namespace: ns, Labels: map[string]string{v1alpha1.SessionLabel: "s1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "web", Image: "registry.example/shop/web:1.2", Command: []string{"sleep", "infinity"}},
			{Name: ec.Name, Image: ec.Image, Stdin: true, TTY: true, SecurityContext: ec.SecurityContext},
		}},
	}
}

// TestCopyPod creates copy pods as the portal holding a grant.
func TestCopyPod(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "copies")
		portal := mustUser(t)(c.Portal())
		grant(t, c, ns, "s-copy", v1alpha1.DebugRole)
		for _, tc := range []struct {
			name   string
			mutate func(*corev1.Pod)
			want   string
		}{
			{name: "compliant copy"},
			{name: "the app's labels", mutate: func(p *corev1.Pod) { p.Labels["app"] = "web" }, want: "[copy.no-app-labels]"},
			{name: "no session label", mutate: func(p *corev1.Pod) { p.Labels = nil }, want: "[copy.session-label]"},
			{name: "host network", mutate: func(p *corev1.Pod) { p.Spec.HostNetwork = true }, want: "[copy.host]"},
			{name: "shared process namespace without the process grant", mutate: func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr.To(true) },
				want: "[copy.process-access]"},
			{name: "root debug container", mutate: func(p *corev1.Pod) { p.Spec.Containers[1].SecurityContext.RunAsUser = ptr.To[int64](0) },
				want: "[copy.user]"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := copyPod(ns)
				if tc.mutate != nil {
					tc.mutate(p)
				}
				err := portal.Client.Create(testContext(t), p, dryRun)
				if tc.want == "" {
					wantAdmitted(t, err)
					return
				}
				wantDenied(t, err, tc.want)
			})
		}
	})
}

func session(ns, name, duration string) *v1alpha1.Session {
	d, _ := time.ParseDuration(duration)
	return &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.SessionSpec{TargetPod: "web-1", Mode: v1alpha1.ModeLive, Duration: metav1.Duration{Duration: d},
			Reason: "checkout returns 500s", Requester: "alice"},
	}
}

// TestSessionRules writes Sessions as the portal and as a cluster admin.
func TestSessionRules(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "sessions")
		portal := mustUser(t)(c.Portal())
		admin := mustUser(t)(c.As("alice", "system:masters"))

		wantDenied(t, portal.Client.Create(testContext(t), session(ns, "too-long", "2h")), "[session.duration] a session lasts from 15m to 75m; this one asks for 2h0m0s.")
		wantDenied(t, portal.Client.Create(testContext(t), session(ns, "too-short", "5m")), "[session.duration]")

		s := session(ns, "s1", "30m")
		wantAdmitted(t, portal.Client.Create(testContext(t), s))

		t.Run("the spec never changes", func(t *testing.T) {
			edited := s.DeepCopy()
			edited.Spec.Duration = metav1.Duration{Duration: 75 * time.Minute}
			wantDenied(t, admin.Client.Update(testContext(t), edited), "[session.spec-immutable]")
		})
		t.Run("the requester approves, written straight to the Session", func(t *testing.T) {
			self := s.DeepCopy()
			self.Status.Phase = v1alpha1.PhaseApproved
			self.Status.Approval = &v1alpha1.Approval{By: "alice", At: metav1.Now(), Mode: v1alpha1.ModeLive}
			wantDenied(t, admin.Client.Status().Update(testContext(t), self), "[session.self-approval]")
		})
		t.Run("another person approves", func(t *testing.T) {
			ok := s.DeepCopy()
			ok.Status.Phase = v1alpha1.PhaseApproved
			ok.Status.Approval = &v1alpha1.Approval{By: "bob", At: metav1.Now(), Mode: v1alpha1.ModeLive}
			wantAdmitted(t, portal.Client.Status().Update(testContext(t), ok))
		})
	})
}

// TestPlaneDeleteScope deletes as the sweeper, which RBAC lets delete any
// RoleBinding and pod: the policy keeps it to its own.
func TestPlaneDeleteScope(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "sweep")
		sweeper := mustUser(t)(c.Sweeper())
		ctx := testContext(t)

		other := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "app-viewers", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "viewers"}},
		}
		wantAdmitted(t, c.Client.Create(ctx, other))
		wantDenied(t, sweeper.Client.Delete(ctx, other), "[delete.grants-only]")

		g := grant(t, c, ns, "s-sweep", v1alpha1.DebugRole)
		wantAdmitted(t, sweeper.Client.Delete(ctx, g))

		pod := appPod(t, c, ns, "never-debugged")
		wantDenied(t, sweeper.Client.Delete(ctx, pod), "[delete.debugged-pods-only]")

		// No delete-collection: RBAC refuses it, and the policy would too (no old object).
		if err := sweeper.Client.DeleteAllOf(ctx, &rbacv1.RoleBinding{}, client.InNamespace(ns)); !isForbiddenByRBAC(err) {
			t.Fatalf("want RBAC to refuse a delete-collection, got %v", err)
		}
	})
}
