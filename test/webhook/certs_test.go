package webhook_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/webhook"
)

// TestCertsWaitForTheirRoles: the chart creates the webhook's Roles beside
// its Deployment, and the authorizer sees a new binding a moment later. A
// webhook that starts in that moment waits for its Roles instead of exiting
// on its first refused read of its Secret.
func TestCertsWaitForTheirRoles(t *testing.T) {
	ctx := context.Background()
	// Fresh objects each time: a create writes its resourceVersion into them.
	apply := func() {
		for _, o := range manifests.WebhookRoles() {
			if err := cl.Apply(ctx, o.(client.Object)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(apply)
	for _, o := range manifests.WebhookRoles() {
		if err := cl.Client.Delete(ctx, o.(client.Object)); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	sa, err := cl.AsServiceAccount(v1alpha1.Namespace, v1alpha1.WebhookServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	// The authorizer's cache lets go of the deleted binding a moment later too.
	var read error
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, read = sa.Kube.CoreV1().Secrets(v1alpha1.Namespace).Get(ctx, manifests.WebhookSecretName, metav1.GetOptions{})
		return apierrors.IsForbidden(read), nil
	}); err != nil {
		t.Fatalf("with its Roles deleted, the webhook's account may still read its Secret: %v", read)
	}

	certDir := t.TempDir()
	certs := &webhook.Certs{Kube: sa.Kube, Namespace: v1alpha1.Namespace, SecretName: manifests.WebhookSecretName,
		WebhookConfiguration: webhook.ConfigurationName, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, CertDir: certDir}
	done := make(chan error, 1)
	go func() { done <- certs.Ensure(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("refused by the authorizer, Ensure returned at once instead of waiting for its Roles: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	apply()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("once its Roles were in place, Ensure still failed: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a minute after its Roles were in place, Ensure had not returned")
	}
	for _, f := range []string{webhook.CertFile, webhook.KeyFile, webhook.CAFile} {
		if _, err := os.Stat(filepath.Join(certDir, f)); err != nil {
			t.Errorf("Ensure returned without writing %s: %v", f, err)
		}
	}
}
