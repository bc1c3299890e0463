package relay_test

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

const hardenedNamespace = "relay-hardened"

// TestHardenedTarget: the relay's own debug container and copy hold under a
// pod that sets everything at pod level the kubelet would hand a container
// that leaves it unset (its user, group and groups, a local AppArmor
// profile, SELinux with a level, seccomp): a live session and a copy each
// start, through the real policies, and the terminal answers. Its SELinux
// type is its own, as a node agent's may be: Flight admits it only in a
// namespace the chart names for node agents, so the suite names this one.
func TestHardenedTarget(t *testing.T) {
	ns := cl.Namespace(t, hardenedNamespace)
	tr := startRelay(t, config(), clock.RealClock{})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: cluster.NodeName,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), RunAsNonRoot: ptr.To(true),
				FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{3000},
				SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("shop-web")},
				SELinuxOptions:  &corev1.SELinuxOptions{Type: "shop_web_t", Level: "s0:c12,c34"},
			},
			Containers: []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.2", Command: []string{"sleep", "3600"}}}},
	}
	if err := cl.Client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []v1alpha1.SessionMode{v1alpha1.ModeLive, v1alpha1.ModeCopy} {
		t.Run(string(mode), func(t *testing.T) {
			started := tr.startedApproving(t, ns, "web-1", `,"mode":"`+string(mode)+`"`, `{"keepPod":true}`)
			debugged := &corev1.Pod{}
			if err := cl.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: started.Status.DebugContainer.Pod}, debugged); err != nil {
				t.Fatal(err)
			}
			if mode == v1alpha1.ModeLive {
				ec := debugged.Spec.EphemeralContainers[len(debugged.Spec.EphemeralContainers)-1].SecurityContext
				if ec.AppArmorProfile == nil || ec.AppArmorProfile.Type != corev1.AppArmorProfileTypeRuntimeDefault ||
					ec.SELinuxOptions == nil || ec.SELinuxOptions.Type != "container_t" || ec.SELinuxOptions.Level != "s0:c12,c34" ||
					ptr.Deref(ec.RunAsGroup, 0) != v1alpha1.DebugUserID {
					t.Fatalf("the relay's debug container does not stand on its own in this pod: %+v", ec)
				}
			}
			tm, _, err := tr.dial(t, alice, ns, started.Name, nil)
			if err != nil {
				t.Fatal(err)
			}
			tm.send(t, "echo hardened-$((6*7))\n")
			tm.waitFor(t, "hardened-42")
			tr.must(t, http.StatusOK, token(t, alice), "POST", sessionPath(ns, started.Name)+"/end", "")
		})
	}
}
