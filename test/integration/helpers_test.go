package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// namespace creates a fresh namespace for one test and deletes it after.
func namespace(t *testing.T, c *cluster.Cluster, name string) string { return c.Namespace(t, name) }

// appPod creates a running app's pod, with the volumes an attacker would
// like a debug container to mount.
func appPod(t *testing.T, c *cluster.Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	return c.AppPod(t, ns, name,
		corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}},
		corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls"}}},
		corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
		}}})
}

// debugContainer is a debug container in the one shape the policies allow,
// as the relay makes it (it mounts nothing).
func debugContainer(name string) corev1.EphemeralContainer {
	return cluster.DebugContainer(name, cluster.DebugImage)
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
	if err := debugsession.WaitGranted(testContext(t), portal.Kube, ns, role); err != nil {
		t.Fatal(err)
	}
	return rb
}

// wantDenied fails unless err is the API server's refusal and says want.
func wantDenied(t *testing.T, err error, want string) {
	t.Helper()
	wantDeniedByOneOf(t, err, want)
}

// wantDeniedByOneOf fails unless err is a refusal that says one of wants:
// where two policies refuse the same request, the API server reports the
// first, and the order among policies is not fixed.
func wantDeniedByOneOf(t *testing.T, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("admitted; want a refusal saying one of %q", wants)
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Fatalf("want Forbidden or Invalid, got %v", err)
	}
	for _, w := range wants {
		if strings.Contains(err.Error(), w) {
			return
		}
	}
	t.Fatalf("the refusal says none of %q: %v", wants, err)
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
