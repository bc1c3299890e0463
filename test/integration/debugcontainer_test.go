package integration

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// addDebugContainer adds ec to the pod as u, by a strategic-merge PATCH of
// pods/ephemeralcontainers (kubectl debug's path) or by a PUT of the whole
// subresource.
func addDebugContainer(t *testing.T, u *cluster.User, ns, pod string, ec corev1.EphemeralContainer, put bool) error {
	t.Helper()
	ctx := testContext(t)
	if put {
		p, err := u.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		_, err = u.Kube.CoreV1().Pods(ns).UpdateEphemeralContainers(ctx, pod, p, metav1.UpdateOptions{})
		return err
	}
	return u.AddDebugContainer(ctx, ns, pod, ec)
}

// TestDebugContainer adds debug containers on the real API server, by both
// the PATCH and the PUT path, as the portal holding a grant.
func TestDebugContainer(t *testing.T) {
	eachProfile(t, func(t *testing.T, profile policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "debug")
		appPod(t, c, ns, "web-1")
		portal := mustUser(t)(c.Portal())

		t.Run("without a grant the portal cannot add one", func(t *testing.T) {
			err := addDebugContainer(t, portal, ns, "web-1", debugContainer("breakglass-nogrant"), false)
			if err == nil || !isForbiddenByRBAC(err) {
				t.Fatalf("want RBAC to refuse, got %v", err)
			}
		})

		grant(t, c, ns, "s-debug", v1alpha1.DebugRole)
		n := 0
		for _, tc := range []struct {
			name   string
			mutate func(*corev1.EphemeralContainer)
			want   string
		}{
			{name: "compliant"},
			{name: "unpinned image", mutate: func(e *corev1.EphemeralContainer) { e.Image = "registry.example/breakglass/debug:latest" },
				want: "[debug.image-digest] a debug image is pinned by digest"},
			{name: "unlisted image", mutate: func(e *corev1.EphemeralContainer) {
				e.Image = "registry.example/other@sha256:" + fmt.Sprintf("%064d", 7)
			},
				want: "[debug.image-allowed]"},
			{name: "root", mutate: func(e *corev1.EphemeralContainer) {
				e.SecurityContext.RunAsUser = ptr.To[int64](0)
				e.SecurityContext.RunAsNonRoot = nil
			}, want: "[debug.user] a debug container runs as user and group 65532"},
			{name: "writable root filesystem", mutate: func(e *corev1.EphemeralContainer) { e.SecurityContext.ReadOnlyRootFilesystem = ptr.To(false) },
				want: "[debug.read-only-root]"},
			{name: "privileged", mutate: func(e *corev1.EphemeralContainer) {
				e.SecurityContext.Privileged = ptr.To(true)
				e.SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
			}, want: "[debug.privilege]"},
			{name: "added capability", mutate: func(e *corev1.EphemeralContainer) {
				e.SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_PTRACE"}
			}, want: "[debug.capabilities]"},
			{name: "configuration mounted read-only", mutate: func(e *corev1.EphemeralContainer) {
				e.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/config", ReadOnly: true}}
			}},
			{name: "writable mount", mutate: func(e *corev1.EphemeralContainer) {
				e.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/config"}}
			}, want: "[debug.mounts]"},
			{name: "scratch directory, where a sidecar may write secrets", mutate: func(e *corev1.EphemeralContainer) {
				e.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}}
			}, want: "[debug.mounted-volumes]"},
			{name: "token mount", mutate: func(e *corev1.EphemeralContainer) {
				e.VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
			}, want: "[debug.mounted-volumes]"},
			{name: "secret mount", mutate: func(e *corev1.EphemeralContainer) {
				e.VolumeMounts = []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}}
			}, want: "[debug.mounted-volumes]"},
			{name: "a device hook's mount path", mutate: func(e *corev1.EphemeralContainer) {
				e.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/var/run/nvidia-container-devices/all", ReadOnly: true}}
			}, want: "[debug.mounted-volumes]"},
			{name: "plain env", mutate: func(e *corev1.EphemeralContainer) {
				e.Env = []corev1.EnvVar{{Name: "AWS_NEURON_VISIBLE_DEVICES", Value: "ALL"}}
			}, want: "[debug.env]"},
			{name: "secret env", mutate: func(e *corev1.EphemeralContainer) {
				e.Env = []corev1.EnvVar{{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "pw"}}}}
			}, want: "[debug.env]"},
			{name: "not a breakglass- name", mutate: func(e *corev1.EphemeralContainer) { e.Name = "debugger-x" }, want: "[debug.name]"},
			{name: "process access without the process grant", mutate: func(e *corev1.EphemeralContainer) { e.TargetContainerName = "web" },
				want: "[debug.process-access]"},
		} {
			for _, put := range []bool{false, true} {
				path := "PATCH"
				if put {
					path = "PUT"
				}
				t.Run(tc.name+" by "+path, func(t *testing.T) {
					n++
					ec := debugContainer(fmt.Sprintf("breakglass-c%d", n))
					if tc.mutate != nil {
						tc.mutate(&ec)
					}
					err := addDebugContainer(t, portal, ns, "web-1", ec, put)
					if tc.want == "" {
						wantAdmitted(t, err)
						return
					}
					wantDenied(t, err, tc.want)
				})
			}
		}

		t.Run("a cluster admin adds a compliant debug container", func(t *testing.T) {
			admin := mustUser(t)(c.As("alice", "system:masters"))
			err := addDebugContainer(t, admin, ns, "web-1", debugContainer("breakglass-admin"), false)
			if profile == policies.Flight {
				wantDenied(t, err, "[debug.portal-only] on this cluster only the break-glass portal adds debug containers")
				return
			}
			wantAdmitted(t, err)
		})

		t.Run("process access once the process grant is held", func(t *testing.T) {
			grant(t, c, ns, "s-process", v1alpha1.DebugProcessRole)
			ec := debugContainer("breakglass-process")
			ec.TargetContainerName = "web"
			wantAdmitted(t, addDebugContainer(t, portal, ns, "web-1", ec, false))
		})
	})
}
