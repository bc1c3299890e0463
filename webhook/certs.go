package webhook

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/tower-dev/breakglass/internal/pki"
)

// Certs manages the webhook's serving certificate when cert-manager does
// not: a CA and a serving certificate kept in a Secret (so replicas share
// them), written to CertDir for the server, and the CA bundle patched into
// the webhook configuration. Rotate renews them once a third of their life
// is left, without an outage window: the CA bundle keeps the previous CA
// beside the new one (replicas that have not reloaded yet still serve
// certificates it signed), and a replica trusts the bundle to hold its new
// CA before it serves the new certificate.
type Certs struct {
	Kube       kubernetes.Interface
	Namespace  string
	SecretName string
	// WebhookConfiguration is the ValidatingWebhookConfiguration to patch.
	WebhookConfiguration string
	// DNSNames and IPs go into the serving certificate.
	DNSNames []string
	IPs      []net.IP
	CertDir  string
	Validity time.Duration
	Clock    clock.PassiveClock
}

// Secret keys and the files the server reads.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	CAFile   = "ca.crt"
	// PreviousCAFile is the CA before the last renewal, kept in the bundle
	// until the next one.
	PreviousCAFile = "previous-ca.crt"
)

// Ensure makes sure a valid certificate is in the Secret, in CertDir and in
// the webhook configuration's CA bundle.
func (c *Certs) Ensure(ctx context.Context) error {
	sec, err := c.stored(ctx)
	if err != nil {
		return err
	}
	// The bundle first: the API server must trust the new CA before this
	// replica serves a certificate it signed.
	bundle := append(append([]byte(nil), sec.Data[CAFile]...), sec.Data[PreviousCAFile]...)
	patch := fmt.Sprintf(`{"webhooks":[{"name":%q,"clientConfig":{"caBundle":%q}}]}`,
		WebhookName, base64.StdEncoding.EncodeToString(bundle))
	err = untilAllowed(ctx, func() error {
		_, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, c.WebhookConfiguration,
			types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("patching the CA bundle into %s: %w", c.WebhookConfiguration, err)
	}
	for _, f := range []string{CertFile, KeyFile, CAFile} {
		if err := writeIfChanged(filepath.Join(c.CertDir, f), sec.Data[f]); err != nil {
			return err
		}
	}
	return nil
}

// stored returns the Secret with a fresh certificate, renewing it if needed.
// When another replica renews it at the same moment, theirs is used.
func (c *Certs) stored(ctx context.Context) (*corev1.Secret, error) {
	secrets := c.Kube.CoreV1().Secrets(c.Namespace)
	for attempt := 0; attempt < 3; attempt++ {
		var sec *corev1.Secret
		err := untilAllowed(ctx, func() (err error) {
			sec, err = secrets.Get(ctx, c.SecretName, metav1.GetOptions{})
			return err
		})
		found := err == nil
		switch {
		case apierrors.IsNotFound(err):
			sec = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: c.SecretName, Namespace: c.Namespace}, Type: corev1.SecretTypeTLS}
		case err != nil:
			return nil, fmt.Errorf("reading the webhook's certificate: %w", err)
		}
		if c.fresh(sec.Data) {
			return sec, nil
		}
		previous := sec.Data[CAFile]
		if sec.Data, err = c.generate(); err != nil {
			return nil, err
		}
		if len(previous) > 0 {
			sec.Data[PreviousCAFile] = previous
		}
		if found {
			sec, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
		} else {
			sec, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
		}
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storing the webhook's certificate: %w", err)
		}
		return sec, nil
	}
	return nil, errors.New("storing the webhook's certificate: it kept changing under us")
}

// rbacSettles bounds how long a refusal by the authorizer is tried again.
// The chart creates the webhook's Roles beside its Deployment, and the API
// server's RBAC cache sees a new binding a moment after it is stored: a
// webhook that starts in that moment would otherwise exit on its first read.
const rbacSettles = 30 * time.Second

// untilAllowed runs call until the authorizer stops refusing it, for at most
// rbacSettles, and returns its last error.
func untilAllowed(ctx context.Context, call func() error) error {
	var err error
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, rbacSettles, true, func(context.Context) (bool, error) {
		err = call()
		return !apierrors.IsForbidden(err), nil
	})
	return err
}

// Rotate runs Ensure every interval until ctx ends.
func (c *Certs) Rotate(ctx context.Context, interval time.Duration, onError func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := c.Ensure(ctx); err != nil && onError != nil {
				onError(err)
			}
		}
	}
}

// fresh reports whether the stored certificate has more than a third of its
// life left and names what the server answers to.
func (c *Certs) fresh(data map[string][]byte) bool {
	block, _ := pem.Decode(data[CertFile])
	if block == nil || len(data[KeyFile]) == 0 || len(data[CAFile]) == 0 {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false
	}
	life := cert.NotAfter.Sub(cert.NotBefore)
	if c.now().After(cert.NotAfter.Add(-life / 3)) {
		return false
	}
	for _, d := range c.DNSNames {
		if cert.VerifyHostname(d) != nil {
			return false
		}
	}
	for _, ip := range c.IPs {
		if cert.VerifyHostname(ip.String()) != nil {
			return false
		}
	}
	return true
}

func (c *Certs) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock.Now()
}

// generate makes a new CA and a serving certificate signed by it.
func (c *Certs) generate() (map[string][]byte, error) {
	validity := c.Validity
	if validity <= 0 {
		validity = 365 * 24 * time.Hour
	}
	ca, err := pki.NewCA("breakglass-webhook-ca", c.now().Add(-time.Minute), validity)
	if err != nil {
		return nil, err
	}
	serving, err := ca.Issue("breakglass-webhook", c.DNSNames, c.IPs, false)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{CertFile: serving.CertPEM, KeyFile: serving.KeyPEM, CAFile: ca.PEM}, nil
}

func writeIfChanged(path string, data []byte) error {
	if len(data) == 0 {
		return errors.New(path + ": empty")
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
