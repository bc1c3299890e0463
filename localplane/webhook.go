package localplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/localplane/cluster"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/webhook"
)

// startWebhook registers the chart's webhook configuration (pointed at a
// loopback URL: there is no Service network here) and serves it with
// self-managed certificates, as the webhook's ServiceAccount.
func startWebhook(ctx context.Context, c *cluster.Cluster, dir, registryHost, keyFile string) (stop func() error, err error) {
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	cfg := manifests.WebhookConfiguration(admissionregistrationv1.WebhookClientConfig{
		URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", port, webhook.Path)),
	})
	for _, o := range append(manifests.WebhookRoles(), cfg) {
		if err := c.Apply(ctx, o.(client.Object)); err != nil {
			return nil, err
		}
	}
	sa, err := c.AsServiceAccount(v1alpha1.Namespace, v1alpha1.WebhookServiceAccount)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	certs := &webhook.Certs{Kube: sa.Kube, Namespace: v1alpha1.Namespace, SecretName: manifests.WebhookSecretName,
		WebhookConfiguration: webhook.ConfigurationName, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, CertDir: certDir}
	if err := certs.Ensure(ctx); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	verifier, err := webhook.NewVerifier(wctx, webhook.Config{Policies: []webhook.ImagePolicy{
		{Name: "debug-images", Repository: registryHost + "/breakglass/*", Key: keyFile},
	}}, webhook.VerifierOptions{Deadline: 3 * time.Second, NameOptions: []name.Option{name.Insecure}})
	if err != nil {
		cancel()
		return nil, err
	}
	srv, err := webhook.NewServer(webhook.ServerOptions{Host: "127.0.0.1", Port: port, CertDir: certDir}, verifier)
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Start(wctx) }()
	stop = func() error {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	if err := waitTLS(ctx, filepath.Join(certDir, webhook.CAFile), port); err != nil {
		_ = stop()
		return nil, err
	}
	return stop, nil
}

// waitTLS waits for a TLS handshake on port that trusts only the CA in caFile.
func waitTLS(ctx context.Context, caFile string, port int) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", "127.0.0.1:"+strconv.Itoa(port),
			&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhook is not serving: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
