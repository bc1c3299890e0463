package webhook_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/internal/image"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
	"github.com/tower-dev/breakglass/webhook"
)

// startWebhook runs the webhook as its own ServiceAccount: it keeps its
// certificate in its Secret, patches its CA bundle, and serves over TLS.
func startWebhook(t testing.TB, deadline time.Duration) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sa, err := cl.AsServiceAccount(v1alpha1.Namespace, v1alpha1.WebhookServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	webhookCertDir = certDir
	certs := &webhook.Certs{Kube: sa.Kube, Namespace: v1alpha1.Namespace, SecretName: manifests.WebhookSecretName,
		WebhookConfiguration: webhook.ConfigurationName, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, CertDir: certDir}
	if err := certs.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	verifier, err := webhook.NewVerifier(ctx, webhook.Config{Policies: []webhook.ImagePolicy{
		{Name: "debug-images", Repository: reg.Host + "/breakglass/*", Key: keyFile},
		{Name: "private-images", Repository: private.Host + "/breakglass/*", Key: keyFile},
		{Name: "keyless-images", Repository: reg.Host + "/breakglass-keyless/*", Keyless: &webhook.Keyless{
			Issuer: keylessIssuer, Subject: keylessSubject, Roots: keylessRoots, RekorPublicKey: rekorKeyFile}},
		{Name: "bundle-keyless", Repository: reg.Host + "/breakglass-bundle/*", Keyless: &webhook.Keyless{
			Issuer: keylessIssuer, Subject: keylessSubject, TrustedRoot: trustedRootFile}},
		{Name: "cli-images", Repository: reg.Host + "/breakglass-cli/*", Key: cli.PublicKey()},
		{Name: "rekor-v2", Repository: reg.Host + "/breakglass-v2/*", Keyless: &webhook.Keyless{
			Issuer: keylessIssuer, Subject: keylessSubject, TrustedRoot: trustedRootV2File}},
	}}, webhook.VerifierOptions{Deadline: deadline, NameOptions: []name.Option{name.Insecure}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := webhook.NewServer(webhook.ServerOptions{Host: "127.0.0.1", Port: webhookPort, CertDir: certDir}, verifier)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the webhook server: %v", err)
		}
	}
	t.Cleanup(stop)
	waitServing(t, certDir)
	return stop
}

// waitServing waits for a TLS handshake with the webhook, trusting only its CA.
func waitServing(t testing.TB, certDir string) {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(certDir, webhook.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", "127.0.0.1:"+itoa(webhookPort),
			&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook is not serving: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func namespace(t testing.TB, name string) string { return cl.Namespace(t, name) }

// session sets up a namespace with an app pod and the portal's grant.
func session(t testing.TB, ns string) *cluster.User {
	t.Helper()
	namespace(t, ns)
	cl.AppPod(t, ns, "web-1")
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	rb := cluster.ProbeGrant("s1", "30m")
	rb.Namespace = ns
	if err := portal.Client.Create(context.Background(), rb); err != nil {
		t.Fatal(err)
	}
	if err := portal.WaitAllowed(context.Background(), ns, "patch", "pods", "ephemeralcontainers"); err != nil {
		t.Fatal(err)
	}
	return portal
}

var (
	nDebug int
	// webhookCertDir is the running webhook's certificate folder.
	webhookCertDir string
)

func addDebugContainer(t testing.TB, portal *cluster.User, ns string, image name.Digest) error {
	t.Helper()
	nDebug++
	return portal.AddDebugContainer(context.Background(), ns, "web-1", cluster.DebugContainer("breakglass-"+itoa(nDebug), image.String()))
}

func wantRefused(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want a refusal saying %q, got %v", want, err)
	}
}

// TestSignatures: signed and pinned is allowed; unsigned, wrongly signed
// and another repository are refused with a clear message.
func TestSignatures(t *testing.T) {
	startWebhook(t, 3*time.Second)
	portal := session(t, "signatures")
	before := webhookCounters(t)
	if err := addDebugContainer(t, portal, "signatures", signed); err != nil {
		t.Fatalf("a signed, pinned debug image was refused: %v", err)
	}
	wantRefused(t, addDebugContainer(t, portal, "signatures", unsigned), "[webhook.signature]")
	wantRefused(t, addDebugContainer(t, portal, "signatures", wrongKey), "no valid signature for policy debug-images")
	wantRefused(t, addDebugContainer(t, portal, "signatures", otherRepo), "no signature policy covers its repository")
	// What the operator's dashboard and alerts read (the API server may
	// retry a call, so at least).
	after := webhookCounters(t)
	for series, least := range map[string]float64{`verifications_total{result="unsigned"}`: 2, `verifications_total{result="no-policy"}`: 1,
		`admissions_total{decision="denied"}`: 3, `admissions_total{decision="allowed"}`: 1} {
		if got := after[series] - before[series]; got < least {
			t.Errorf("breakglass_webhook_%s went up by %v, want at least %v", series, got, least)
		}
	}
	if after[`verifications_total{result="verified"}`]+after[`verifications_total{result="cached"}`] <= before[`verifications_total{result="verified"}`]+before[`verifications_total{result="cached"}`] {
		t.Error("the signed image's check was not counted")
	}

	t.Run("a copy pod with an unsigned debug container", func(t *testing.T) {
		// A copy in the shape the copy policies admit, as the relay builds it.
		app := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "signatures"},
			Spec: corev1.PodSpec{NodeName: "node-1", SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
				Containers: []corev1.Container{{Name: "web", Image: "registry.example/shop/web@sha256:" + strings.Repeat("a", 64)}}},
		}
		s1 := sessiontest.Make("signatures", "s1").Mode(v1alpha1.ModeCopy).Obj()
		pod, err := sessionobjects.CopyPod(app, s1, "breakglass-s1", unsigned.String(), false, 45*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		wantRefused(t, portal.Client.Create(context.Background(), pod), "[webhook.signature]")
		pod.Spec.Containers[1].Image = signed.String()
		if err := portal.Client.Create(context.Background(), pod); err != nil {
			t.Fatalf("a copy with a signed debug image was refused: %v", err)
		}

		// A cluster admin gives the admitted copy's debug container an
		// unsigned image: the policies refuse it, and with their binding
		// deleted (an admin can) the webhook still sees the new image.
		ctx := context.Background()
		swap := func() error {
			cur := &corev1.Pod{}
			if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
				return err
			}
			cur.Spec.Containers[1].Image = unsigned.String()
			return cl.Client.Update(ctx, cur)
		}
		wantRefused(t, swap(), "[copy.unchanged]")
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := cl.Client.Get(ctx, client.ObjectKey{Name: policies.CopyPodUpdates().Name}, binding); err != nil {
			t.Fatal(err)
		}
		if err := cl.Client.Delete(ctx, binding); err != nil {
			t.Fatal(err)
		}
		defer func() {
			binding.ResourceVersion = ""
			if err := cl.Client.Create(ctx, binding); err != nil {
				t.Errorf("restoring the binding: %v", err)
			}
		}()
		// The API server drops the binding from its informer a moment later.
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if err = swap(); err == nil || strings.Contains(err.Error(), "[webhook.signature]") {
				break
			}
		}
		wantRefused(t, err, "[webhook.signature]")
	})
}

// TestKeyless: an image signed keyless by the trusted identity, with its
// Rekor entry, is admitted; one signed by another identity, by a CA that is
// not trusted, without a Rekor entry, or with a key where the policy wants a
// certificate, is refused.
func TestKeyless(t *testing.T) {
	startWebhook(t, 3*time.Second)
	portal := session(t, "keyless")
	if err := addDebugContainer(t, portal, "keyless", keylessGood); err != nil {
		t.Fatalf("a keyless-signed image by the trusted identity was refused: %v", err)
	}
	wantRefused(t, addDebugContainer(t, portal, "keyless", keylessOther), "none of the expected identities")
	wantRefused(t, addDebugContainer(t, portal, "keyless", keylessUntrusted), "leaf certificate verification failed")
	// Without the log's entry carried with the signature, the webhook
	// (which looks nothing up online) cannot see it logged: refused.
	wantRefused(t, addDebugContainer(t, portal, "keyless", keylessUnlogged), "rekor client not provided")
	wantRefused(t, addDebugContainer(t, portal, "keyless", keylessKeyed), "no valid signature for policy keyless-images")
}

// TestBundles: images signed in the Sigstore bundle format (cosign v3's
// default, found as OCI referrers) are admitted with the policy's key or
// identity and refused otherwise, each refusal saying why; the stock cosign
// CLI's signatures are admitted in both layouts.
func TestBundles(t *testing.T) {
	startWebhook(t, 3*time.Second)
	portal := session(t, "bundles")
	for what, image := range map[string]name.Digest{
		"a bundle by the policy's key":                                                   bundleSigned,
		"a keyless bundle by the trusted identity":                                       keylessBundleGood,
		"the stock cosign CLI's bundle":                                                  cliBundle,
		"the stock cosign CLI's older .sig signature":                                    cliLegacy,
		"a keyless bundle logged in Rekor v2 and countersigned by a timestamp authority": keylessV2Timestamped,
		"a bundle by the policy's key beside a 2 MiB junk referrer":                      bundleWithJunk,
	} {
		if err := addDebugContainer(t, portal, "bundles", image); err != nil {
			t.Errorf("%s was refused: %v", what, err)
		}
	}
	for _, tc := range []struct {
		what  string
		image name.Digest
		want  string
	}{
		{"another key", bundleWrongKey, "no valid signature for policy debug-images: bundle 1: failed to verify signature"},
		{"a tampered statement", bundleTampered, "bundle 1: failed to verify signature"},
		{"only a 2 MiB junk referrer", unsignedWithJunk, "a bundle of 2097"},
		{"an attestation, not a signature", bundleAttestation, `not an image signature: an attestation of "https://spdx.dev/Document"`},
		{"another identity", keylessBundleOther, "no matching CertificateIdentity"},
		{"a certificate expired when logged", keylessBundleExpired, "integrated time outside certificate validity"},
		{"a certificate with no log entry or timestamp", keylessBundleUnlogged, "not enough verified log entries"},
		// Rekor v2 gives no time: without a timestamp authority's, the
		// certificate's ten minutes cannot be checked.
		{"a certificate logged in Rekor v2 without a timestamp", keylessV2Untimed, "threshold not met for verified signed & log entry integrated timestamps"},
	} {
		err := addDebugContainer(t, portal, "bundles", tc.image)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want a refusal saying %q, got %v", tc.what, tc.want, err)
		}
	}
}

// TestPullSecretCredentials: an image in a registry that needs credentials
// is refused while the webhook has none, and admitted once the pull
// secret's .dockerconfigjson is mounted where $DOCKER_CONFIG points, as the
// chart mounts it.
func TestPullSecretCredentials(t *testing.T) {
	startWebhook(t, 3*time.Second)
	portal := session(t, "pull-secret")
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	wantRefused(t, addDebugContainer(t, portal, "pull-secret", privateSigned), "401 Unauthorized")
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(private.User + ":" + private.Password))
	config := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, private.Host, auth)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	if err := addDebugContainer(t, portal, "pull-secret", privateSigned); err != nil {
		t.Fatalf("with the pull secret's credentials, a signed image was refused: %v", err)
	}
}

// TestFaultWebhookDown: with the webhook stopped, ordinary pods are created as
// usual while a debug container is refused, saying the webhook is down.
func TestFaultWebhookDown(t *testing.T) {
	stop := startWebhook(t, 3*time.Second)
	portal := session(t, "down")
	stop()
	ordinary := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "down", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.2"}}},
	}
	if err := cl.Client.Create(context.Background(), ordinary); err != nil {
		t.Fatalf("an ordinary pod waited on the stopped webhook: %v", err)
	}
	wantRefused(t, addDebugContainer(t, portal, "down", signed), "failed calling webhook \""+webhook.WebhookName+"\"")
}

// TestFaultSlowRegistry: a registry slower than the verifier's deadline ends in a
// denial, never in an allow.
func TestFaultSlowRegistry(t *testing.T) {
	startWebhook(t, time.Second)
	portal := session(t, "slow")
	reg.Slow.Store(true)
	defer reg.Slow.Store(false)
	wantRefused(t, addDebugContainer(t, portal, "slow", signedLate), "signature check did not finish in time")
}

// webhookCounters reads the webhook's counters from the registry its
// metrics port serves, as series name{label="value"} without the prefix.
func webhookCounters(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		name, ok := strings.CutPrefix(f.GetName(), "breakglass_webhook_")
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				out[fmt.Sprintf("%s{%s=%q}", name, l.GetName(), l.GetValue())] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// TestImageIndexes: the debug image as make image builds it, one index for
// linux/amd64 and linux/arm64, signed by its digest with the stock cosign
// CLI: `cosign verify` passes, the SBOM attached to it is among its
// referrers, the webhook admits a debug container pinned to the index and
// refuses one pinned to a platform's own image, which nobody signed.
func TestImageIndexes(t *testing.T) {
	prereq.Need(t, prereq.Images)
	if debugIndex.Name() == "" {
		t.Fatal("the debug image's index was not pushed")
	}
	ctx := context.Background()
	if err := cli.Verify(ctx, debugIndex); err != nil {
		t.Fatalf("cosign verify of the index: %v", err)
	}
	if err := cli.Verify(ctx, debugIndexArm64); err == nil {
		t.Fatal("cosign verify passed for the arm64 image alone, which nobody signed")
	}
	referrers, err := remote.Referrers(debugIndex, remote.WithAuth(reg.Auth()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := referrers.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range m.Manifests {
		found = found || (d.ArtifactType == image.SBOMArtifactType && d.Digest.String() == debugIndexSBOM.DigestStr())
	}
	if !found {
		t.Errorf("the index's referrers %v lack its SBOM %s", m.Manifests, debugIndexSBOM)
	}

	startWebhook(t, 3*time.Second)
	portal := session(t, "indexes")
	if err := addDebugContainer(t, portal, "indexes", debugIndex); err != nil {
		t.Fatalf("a debug container pinned to the signed index was refused: %v", err)
	}
	wantRefused(t, addDebugContainer(t, portal, "indexes", debugIndexArm64), "[webhook.signature]")
}
