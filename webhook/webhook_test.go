package webhook

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

func TestConfigCheck(t *testing.T) {
	ok := ImagePolicy{Name: "p", Repository: "registry.example/breakglass/*", Key: "/keys/cosign.pub"}
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"none", Config{}, "policies: none"},
		{"no name", Config{Policies: []ImagePolicy{{Repository: "r.example/x", Key: "k"}}}, "policies[0].name: required"},
		{"twice", Config{Policies: []ImagePolicy{ok, ok}}, `"p" used twice`},
		{"wildcard inside", Config{Policies: []ImagePolicy{{Name: "p", Repository: "registry.example/*/debug", Key: "k"}}}, "must be a repository or a prefix"},
		{"a tag", Config{Policies: []ImagePolicy{{Name: "p", Repository: "registry.example/debug:1", Key: "k"}}}, "names a tag or digest"},
		{"no registry", Config{Policies: []ImagePolicy{{Name: "p", Repository: "acme/debug", Key: "k"}}}, "names no registry host"},
		{"docker.io", Config{Policies: []ImagePolicy{{Name: "p", Repository: "docker.io/acme/*", Key: "k"}}}, "write Docker Hub as index.docker.io"},
		{"a quote", Config{Policies: []ImagePolicy{{Name: "p", Repository: "r.example/x')", Key: "k"}}}, "must be a repository"},
		{"no key", Config{Policies: []ImagePolicy{{Name: "p", Repository: "r.example/x"}}}, "exactly one of key"},
		{"key and keyless", Config{Policies: []ImagePolicy{{Name: "p", Repository: "r.example/x", Key: "k", Keyless: &Keyless{}}}}, "exactly one of key"},
		{"keyless without identity", Config{Policies: []ImagePolicy{{Name: "p", Repository: "r.example/x", Keyless: &Keyless{Issuer: "https://i"}}}}, "exactly one of subject"},
		{"keyless without roots", Config{Policies: []ImagePolicy{{Name: "p", Repository: "r.example/x", Keyless: &Keyless{Issuer: "https://i", Subject: "a@b"}}}}, "roots and rekorPublicKey"},
		{"keyless with a trusted root and roots", Config{Policies: []ImagePolicy{{Name: "p", Repository: "r.example/x", Keyless: &Keyless{Issuer: "https://i", Subject: "a@b", TrustedRoot: "t.json", Roots: "r.pem"}}}}, "drop roots and rekorPublicKey"},
	} {
		if err := tc.c.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := (Config{Policies: []ImagePolicy{ok, {Name: "q", Repository: "127.0.0.1:5000/debug", Key: "k"}}}).Check(); err != nil {
		t.Errorf("a registry with a port: %v", err)
	}
}

func TestConfigFor(t *testing.T) {
	c := Config{Policies: []ImagePolicy{
		{Name: "all", Repository: "registry.example/*", Key: "k"},
		{Name: "bg", Repository: "registry.example/breakglass/*", Key: "k"},
		{Name: "exact", Repository: "registry.example/breakglass/debug", Key: "k"},
	}}
	for repo, want := range map[string]string{
		"registry.example/breakglass/debug": "exact",
		"registry.example/breakglass/tools": "bg",
		"registry.example/other":            "all",
		"elsewhere.example/breakglass":      "",
		"registry.example.evil/x":           "",
	} {
		p, ok := c.For(repo)
		if (want == "") == ok || p.Name != want {
			t.Errorf("For(%s) = %q %v, want %q", repo, p.Name, ok, want)
		}
	}
}

func TestCacheKeepsSuccessesForTTL(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	c := newSuccessCache(2, time.Minute, clk)
	c.add("sha256:a", "p")
	if !c.ok("sha256:a", "p") || c.ok("sha256:a", "other") {
		t.Fatal("the cache is keyed by digest and policy")
	}
	clk.SetTime(clk.Now().Add(61 * time.Second))
	if c.ok("sha256:a", "p") {
		t.Fatal("a success outlived its TTL")
	}
	c.add("sha256:a", "p")
	c.add("sha256:b", "p")
	c.add("sha256:c", "p")
	if c.ok("sha256:a", "p") {
		t.Fatal("the cache grew past its size")
	}
}

func TestVerifyRefusesBeforeAnyNetwork(t *testing.T) {
	v := &Verifier{config: Config{Policies: []ImagePolicy{{Name: "p", Repository: "registry.example/breakglass/*", Key: "k"}}},
		cache: newSuccessCache(1, time.Minute, clocktesting.NewFakePassiveClock(time.Now())), opts: VerifierOptions{Deadline: time.Second}}
	for image, want := range map[string]error{
		"registry.example/breakglass/debug:latest":                            ErrNotPinned,
		"registry.example/breakglass/debug":                                   ErrNotPinned,
		"registry.example/other/debug@sha256:" + strings.Repeat("a", 64):      ErrNoPolicy,
		"registry.example/breakglass/debug@sha256:" + strings.Repeat("z", 64): ErrNotPinned,
	} {
		if err := v.Verify(context.Background(), image); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", image, err, want)
		}
	}
}

type recordingVerifier struct{ seen []string }

func (r *recordingVerifier) Verify(_ context.Context, image string) error {
	r.seen = append(r.seen, image)
	if strings.Contains(image, "bad") {
		return errors.New(image + ": bad")
	}
	return nil
}

func request(t *testing.T, op admissionv1.Operation, sub string, obj, old *corev1.Pod) admission.Request {
	raw := func(p *corev1.Pod) runtime.RawExtension {
		if p == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, SubResource: sub, Object: raw(obj), OldObject: raw(old)}}
}

func TestHandlerChecksOnlyAddedDebugImages(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	rv := &recordingVerifier{}
	h := &Handler{Images: rv, Decoder: admission.NewDecoder(scheme)}
	ec := func(name, image string) corev1.EphemeralContainer {
		return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: image}}
	}
	old := &corev1.Pod{Spec: corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{ec("breakglass-old", "old")}}}
	cur := old.DeepCopy()
	cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, ec("breakglass-new", "new"), ec("debugger", "other"))
	resp := h.Handle(context.Background(), request(t, admissionv1.Update, "ephemeralcontainers", cur, old))
	if !resp.Allowed || strings.Join(rv.seen, ",") != "new" {
		t.Fatalf("allowed %v, checked %v; want only the added breakglass- image", resp.Allowed, rv.seen)
	}

	rv.seen = nil
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "breakglass-init", Image: "init-bad"}},
		Containers:     []corev1.Container{{Name: "web", Image: "app"}, {Name: "breakglass-s1", Image: "dbg"}},
	}}
	resp = h.Handle(context.Background(), request(t, admissionv1.Create, "", pod, nil))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "[webhook.signature]") || !strings.Contains(resp.Result.Message, "init-bad: bad") {
		t.Fatalf("want a denial naming the bad image, got %+v", resp.Result)
	}
	if strings.Join(rv.seen, ",") != "init-bad,dbg" {
		t.Fatalf("checked %v", rv.seen)
	}

	// A held copy: the hold volume's image runs in the app containers.
	rv.seen = nil
	held := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "web", Image: "app"}, {Name: "breakglass-s1", Image: "dbg"}},
		Volumes: []corev1.Volume{{Name: v1alpha1.HoldVolume, VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "hold-bad"}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}}
	resp = h.Handle(context.Background(), request(t, admissionv1.Create, "", held, nil))
	if resp.Allowed || strings.Join(rv.seen, ",") != "dbg,hold-bad" || !strings.Contains(resp.Result.Message, "hold-bad: bad") {
		t.Fatalf("a held copy's hold volume: allowed %v, checked %v, %s", resp.Allowed, rv.seen, resp.Result.Message)
	}

	resp = h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte("{not json")}}})
	if resp.Allowed || resp.Result.Code != 400 {
		t.Fatalf("a malformed object: %+v", resp.Result)
	}
}

func TestCertsRenewWhenAThirdIsLeft(t *testing.T) {
	kube := fake.NewClientset(&admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: WebhookName}},
	})
	clk := clocktesting.NewFakePassiveClock(time.Now())
	c := &Certs{Kube: kube, Namespace: "breakglass-system", SecretName: "tls", WebhookConfiguration: ConfigurationName,
		DNSNames: []string{"breakglass-webhook.breakglass-system.svc"}, CertDir: t.TempDir(), Validity: 90 * time.Hour, Clock: clk}
	ctx := context.Background()
	serving := func() *x509.Certificate {
		sec, err := kube.CoreV1().Secrets("breakglass-system").Get(ctx, "tls", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(sec.Data[CertFile])
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	bundle := func() string {
		cfg, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, ConfigurationName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(cfg.Webhooks[0].ClientConfig.CABundle)
	}
	if err := c.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	first := serving()
	if first.VerifyHostname("breakglass-webhook.breakglass-system.svc") != nil || !strings.Contains(bundle(), "BEGIN CERTIFICATE") {
		t.Fatal("the first certificate or the CA bundle is wrong")
	}
	clk.SetTime(clk.Now().Add(50 * time.Hour)) // 40h of 90h left: still fresh
	if err := c.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if serving().SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatal("renewed a certificate with more than a third of its life left")
	}
	before := bundle()
	clk.SetTime(clk.Now().Add(11 * time.Hour)) // 29h left: renew
	if err := c.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if serving().SerialNumber.Cmp(first.SerialNumber) == 0 || bundle() == before {
		t.Fatal("did not renew the certificate and the CA bundle")
	}
	// No outage window: a replica that has not reloaded yet still serves the
	// first certificate, and the API server (trusting the bundle) accepts it
	// as well as the new one.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(bundle())) {
		t.Fatal("the bundle holds no certificate")
	}
	for what, cert := range map[string]*x509.Certificate{"the old certificate": first, "the new certificate": serving()} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "breakglass-webhook.breakglass-system.svc", CurrentTime: clk.Now()}); err != nil {
			t.Errorf("%s after the renewal: %v", what, err)
		}
	}
	// The next renewal drops the first CA: only the last two are trusted.
	clk.SetTime(clk.Now().Add(70 * time.Hour))
	if err := c.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(bundle(), "BEGIN CERTIFICATE"); n != 2 {
		t.Fatalf("the bundle holds %d CAs, want the current and the previous", n)
	}
}
