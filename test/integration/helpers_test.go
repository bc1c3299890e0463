package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/test/cluster"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// namespace creates a fresh namespace for one test and deletes it after.
func namespace(t *testing.T, c *cluster.Cluster, name string) string {
	t.Helper()
	ctx := testContext(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Client.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), ns) })
	return name
}

// appPod creates a running app's pod, as its controller would, with the
// volumes an attacker would like a debug container to mount.
func appPod(t *testing.T, c *cluster.Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "default",
			Containers:         []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.2"}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls"}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
				}}},
			},
		},
	}
	if err := c.Client.Create(testContext(t), pod); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return pod
}

// debugContainer is a debug container in the one shape the policies allow.
func debugContainer(name string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name:                     name,
		Image:                    debugImage,
		Stdin:                    true,
		TTY:                      true,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		VolumeMounts:             []corev1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                ptr.To(v1alpha1.DebugUserID),
			RunAsNonRoot:             ptr.To(true),
			ReadOnlyRootFilesystem:   ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}}
}

// grant makes the portal's grant for session in ns, to role, as the portal,
// and deletes it after the test.
func grant(t *testing.T, c *cluster.Cluster, ns, session, role string) *rbacv1.RoleBinding {
	t.Helper()
	portal, err := c.Portal()
	if err != nil {
		t.Fatal(err)
	}
	rb := cluster.ProbeGrant(session, "30m")
	rb.Namespace = ns
	rb.RoleRef.Name = role
	if err := portal.Client.Create(testContext(t), rb); err != nil {
		t.Fatalf("the portal's well-formed grant to %s was refused: %v", role, err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), rb) })
	return rb
}

// wantDenied fails unless err is the API server's refusal and says want.
func wantDenied(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("admitted; want a refusal saying %q", want)
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Fatalf("want Forbidden or Invalid, got %v", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("the refusal does not say %q: %v", want, err)
	}
}

// wantAdmitted fails if err is an error at all.
func wantAdmitted(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
}

var dryRun = client.DryRunAll

// mustUser returns a function that unwraps a (user, error) pair or fails t.
func mustUser(t *testing.T) func(*cluster.User, error) *cluster.User {
	return func(u *cluster.User, err error) *cluster.User {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
}

// isForbiddenByRBAC reports a refusal by the authorizer, not by admission.
func isForbiddenByRBAC(err error) bool {
	return apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "ValidatingAdmissionPolicy")
}
