package integration

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestEffectiveSecurity adds debug containers to pods whose pod-level
// settings the kubelet would hand a container that leaves them unset: the
// root group, SELinux spc_t, AppArmor unconfined, group 0 for every
// container. (An AppArmor annotation cannot name an ephemeral container:
// the API server takes such annotations only at create, for containers
// that exist.) A debug container that leaves
// them to the pod is refused; the relay's own, built for that pod
// (sessionobjects.ConfinedIn), is admitted; a pod whose setting no container can
// take back is refused either way, and the relay says so before it asks.
func TestEffectiveSecurity(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, effectiveNamespace)
		admin := mustUser(t)(c.As("alice", "system:masters"))
		portal := mustUser(t)(c.Portal())
		grant(t, c, ns, "s-effective", v1alpha1.DebugRole)
		for _, tc := range []struct {
			name  string
			psc   *corev1.PodSecurityContext
			want  string // of a debug container that leaves all to the pod
			unfit bool   // LiveDebuggable refuses the pod
		}{
			{name: "root-group", psc: &corev1.PodSecurityContext{RunAsGroup: ptr.To[int64](0)}, want: "[debug.user]"},
			{name: "spc-t", psc: &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t", Level: "s0:c1,c2"}}, want: "[debug.confinement]"},
			{name: "unconfined", psc: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}, want: "[debug.confinement]"},
			{name: "fsgroup-0", psc: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](0)}, want: "[debug.groups]", unfit: true},
			{name: "supplemental-0", psc: &corev1.PodSecurityContext{SupplementalGroups: []int64{0}}, want: "[debug.groups]", unfit: true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns},
					Spec: corev1.PodSpec{NodeName: cluster.AppNodeName, SecurityContext: tc.psc, Containers: []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.2"}},
						Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
				wantAdmitted(t, admin.Client.Create(testContext(t), pod))
				// The relay's container, not built for this pod: its
				// confinement (and, for the root group, its group) left to the pod.
				lax := debugContainer("breakglass-lax")
				if tc.name == "root-group" {
					lax.SecurityContext.RunAsGroup = nil
				}
				wantDenied(t, addDebugContainer(t, portal, ns, tc.name, lax, false), tc.want)

				relays := debugContainer("breakglass-" + tc.name)
				sessionobjects.ConfinedIn(relays.SecurityContext, pod, relays.Name)
				err := addDebugContainer(t, portal, ns, tc.name, relays, true)
				if unfit := sessionobjects.LiveDebuggable(pod); (unfit != nil) != tc.unfit {
					t.Fatalf("the relay's own check: %v, want unfit %t", unfit, tc.unfit)
				}
				if tc.unfit {
					wantDenied(t, err, tc.want)
				} else {
					wantAdmitted(t, err)
				}
			})
		}
	})
}
