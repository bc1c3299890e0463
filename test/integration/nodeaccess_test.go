package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// nodeDebugger is the pod `kubectl debug node/node-1 -it --image=busybox`
// makes: on the node's namespaces, with its root filesystem mounted.
func nodeDebugger(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName: cluster.AppNodeName, HostIPC: true, HostNetwork: true, HostPID: true,
			Containers: []corev1.Container{{Name: "debugger", Image: "busybox", Stdin: true, TTY: true,
				VolumeMounts: []corev1.VolumeMount{{Name: "host-root", MountPath: "/host"}}}},
			Volumes: []corev1.Volume{{Name: "host-root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
		},
	}
}

// TestNodeAccess: on Flight, no pod reaches its node in an app namespace,
// whoever creates it, a cluster admin included; the system namespaces and
// those the chart names for node agents keep such pods. On Ground, Pod
// Security Admission decides, as before.
func TestNodeAccess(t *testing.T) {
	eachProfile(t, func(t *testing.T, p policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "node-access")
		admin := mustUser(t)(c.As("alice", "system:masters"))
		ctx := testContext(t)

		err := admin.Client.Create(ctx, nodeDebugger(ns, "node-debugger"))
		if p == policies.Flight {
			wantDenied(t, err, "[node.host-namespaces]")
		} else {
			wantAdmitted(t, err)
		}

		privileged := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "privileged", Namespace: ns},
			Spec: corev1.PodSpec{NodeName: cluster.AppNodeName, Containers: []corev1.Container{{Name: "web", Image: "busybox",
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}}
		err = admin.Client.Create(ctx, privileged)
		if p == policies.Flight {
			wantDenied(t, err, "[node.privileged]")
		} else {
			wantAdmitted(t, err)
		}

		// An app at the baseline is any app's business.
		wantAdmitted(t, admin.Client.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: corev1.PodSpec{NodeName: cluster.AppNodeName, Containers: []corev1.Container{{Name: "web", Image: "busybox",
				Ports:           []corev1.ContainerPort{{ContainerPort: 80}},
				SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}}}}}}}))

		// Where node agents live, by the chart's values or by name.
		for _, exempt := range []string{"kube-system", namespace(t, c, nodeAgentsNamespace)} {
			pod := nodeDebugger(exempt, "node-debugger")
			wantAdmitted(t, admin.Client.Create(ctx, pod))
			t.Cleanup(func() {
				_ = c.Client.Delete(context.Background(), pod, &client.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			})
		}
	})
}
