package chart_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/localplane/tools"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/internal/image"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/internal/pki"
	"github.com/tower-dev/breakglass/localplane/registry"
	relayclient "github.com/tower-dev/breakglass/relay/client"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
	"github.com/tower-dev/breakglass/test/harness/s3server"
)

// e2eCluster is the cluster's name in the relay's config and the
// recordings' keys.
const e2eCluster = "e2e"

var (
	alice = oidcissuer.Person{Email: "alice@example.com", Groups: []string{"shop-owners"}}
	bob   = oidcissuer.Person{Email: "bob@example.com", Groups: []string{"sre"}}
)

// TestChartOnRealNode installs the chart with Helm onto the real node (a
// kubelet on containerd and runc), the plane's three servers running as
// pods from our own image pulled by digest, and walks a two-person session
// through the installed relay: the running webhook refuses an unsigned
// debug image; the signed one runs as 65532 on a read-only root with no
// capabilities and no token, the app still serving beside it; the session
// is recorded to S3 with Object Lock, ended, the pod recycled by its
// Deployment and the grant deleted. Then an upgrade while a session runs
// (the relay's replicas hand it over as they roll: it goes on, one
// recording across the upgrade), and an uninstall that leaves nothing
// standing.
func TestChartOnRealNode(t *testing.T) {
	prereq.Need(t, append(append(prereq.ControlPlane, prereq.Cosign, prereq.VersityGW, prereq.Images), prereq.RealNode...)...)
	log.SetLogger(logr.Discard())
	ctx := context.Background()
	begin := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Empty: true, RealNode: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("the real node is ready after %s", time.Since(begin).Round(time.Second))

	step := func(what string) { t.Logf("%6.1fs %s", time.Since(begin).Seconds(), what) }
	server := pushServerImage(t, c.Registry)
	step("the server image's index pushed")
	debug, unsigned, keyFile := pushDebugImages(t, c.Registry)
	store, err := s3server.Start(cluster.BridgeIP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Stop() })
	if err := store.CreateBucket("evidence", true); err != nil {
		t.Fatal(err)
	}
	issuer, err := oidcissuer.StartOn(cluster.BridgeIP + ":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = issuer.Close() })

	// What the admin makes before installing: the namespace, the cosign
	// public key, the store's credentials and the relay's TLS certificate.
	c.Namespace(t, v1alpha1.Namespace)
	relayTLS, trust := relayCertificate(t)
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "cosign-keys", Namespace: v1alpha1.Namespace}, Data: map[string][]byte{"cosign.pub": key}},
		{ObjectMeta: metav1.ObjectMeta{Name: "evidence-store", Namespace: v1alpha1.Namespace}, StringData: map[string]string{
			"AWS_ACCESS_KEY_ID": s3server.AccessKey, "AWS_SECRET_ACCESS_KEY": s3server.SecretKey}},
		relayTLS,
	} {
		if err := c.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}

	chrt, err := loader.Load(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	hc := helmConfig(t, c)
	install := action.NewInstall(hc)
	install.ReleaseName, install.Namespace, install.Wait, install.Timeout = "breakglass", v1alpha1.Namespace, true, 4*time.Minute
	settings := e2eValues{server: server, debug: debug, unsigned: unsigned, registry: c.Registry.Host, s3: store.Endpoint, issuer: issuer.URL}
	began := time.Now()
	if _, err := install.RunWithContext(ctx, chrt, values(t, settings.yaml(""))); err != nil {
		t.Fatalf("helm install: %v\n%s", err, podReport(ctx, c))
	}
	t.Logf("helm install with the plane's pods ready: %s", time.Since(began).Round(time.Second))
	for _, d := range []string{"breakglass-webhook", "breakglass-sweeper"} {
		requireRunsImage(ctx, t, c, d, server)
	}
	requireRelayReplicas(ctx, t, c, server, 2)

	// helm test: the plane checked from inside, as the portal.
	tester := action.NewReleaseTesting(hc)
	tester.Namespace, tester.Timeout = v1alpha1.Namespace, 2*time.Minute
	if rel, err := tester.Run("breakglass"); err != nil {
		t.Fatalf("helm test: %v\n%s", err, podReport(ctx, c))
	} else if len(rel.Hooks) != 1 || rel.Hooks[0].LastRun.Phase != "Succeeded" {
		t.Fatalf("helm test ran %d hooks, the first %+v", len(rel.Hooks), rel.Hooks)
	}
	step("helm test passed")

	app := c.Namespace(t, "shop")
	webPod := appDeployment(ctx, t, c, app, debug)
	before := webPod.Spec.Containers[0]
	// Through the relay's Service, as a portal in the cluster reaches it:
	// kube-proxy's rules pick a replica.
	relayURL := "https://" + serviceIP(ctx, t, c, "breakglass-relay") + ":8443"
	asAlice := &relayclient.Client{BaseURL: relayURL, Token: token(t, issuer, alice), TLS: trust}
	asBob := &relayclient.Client{BaseURL: relayURL, Token: token(t, issuer, bob), TLS: trust}
	if _, err := (&relayclient.Client{BaseURL: relayURL, Token: token(t, issuer, bob)}).List(ctx, e2eCluster, "shop"); err == nil {
		t.Fatal("the relay's certificate was trusted without its CA")
	}

	step("the app runs")
	target := startSession(ctx, t, c, asAlice, asBob, webPod.Name)
	step("the session is Active")

	// The running webhook refuses an image the params allow but nobody signed.
	portal, err := c.Portal()
	if err != nil {
		t.Fatal(err)
	}
	err = portal.AddDebugContainer(ctx, app, webPod.Name, cluster.DebugContainer("breakglass-unsigned", unsigned))
	if err == nil || !strings.Contains(err.Error(), "[webhook.signature]") {
		t.Fatalf("an unsigned debug image: %v, want the webhook's refusal [webhook.signature]", err)
	}

	out := &cluster.SyncBuffer{}
	inR, inW := io.Pipe()
	attached := make(chan error, 1)
	go func() { attached <- asAlice.Attach(ctx, target, inR, out, io.Discard, nil) }()
	// The pty echoes input: wait for a line the input does not contain.
	// Written aside: an attach that fails never reads it.
	go fmt.Fprint(inW, "id -u; touch /x; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; ls /var/run/secrets/kubernetes.io; echo done-$((40+2))\n")
	if err := waitOutput(out, "\ndone-42", attached); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n65532\r", "Read-only file system", "CapEff:\t0000000000000000", "NoNewPrivs:\t1", "No such file or directory"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the debug container's terminal lacks %q:\n%s", want, out.String())
		}
	}
	running := pod(ctx, t, c, app, webPod.Name)
	if len(running.Spec.Containers) != 1 || running.Spec.Containers[0].Image != before.Image || !equalCommand(running.Spec.Containers[0].Command, before.Command) {
		t.Errorf("the app container changed: %+v", running.Spec.Containers)
	}
	requireServing(t, running.Status.PodIP)
	_ = inW.Close()

	if _, err := asBob.End(ctx, target, "done looking"); err != nil {
		t.Fatal(err)
	}
	sess := waitEnded(t, c, target)
	step("the session ended")
	requireGrantGone(ctx, t, c, app, target.Name)
	requireRecycled(ctx, t, c, app, webPod)
	requireRecording(ctx, t, store, sess, "65532")
	step("grant gone, pod recycled, recording read back")

	// An upgrade while a session runs: the relay's new configuration rolls
	// its replicas one at a time; each hands its sessions to the other as it
	// goes, so the session outlives the upgrade, in a new debug container,
	// one recording across it.
	webPod = runningAppPod(ctx, t, c, app)
	second := startSession(ctx, t, c, asAlice, asBob, webPod.Name)
	step("a second session is Active")
	typeInto(ctx, t, holderClient(ctx, t, c, second, token(t, issuer, alice), trust), second, "echo before-$((6*7))\n", "before-42")
	// The other replica passes the terminal on to the one that runs it, at
	// its name behind the headless Service (CoreDNS, on the node).
	typeInto(ctx, t, otherReplicaClient(ctx, t, c, second, token(t, issuer, alice), trust), second, "echo passed-on-$((6*7))\n", "passed-on-42")
	step("the terminal passed on from the other replica")
	upgrade := action.NewUpgrade(hc)
	upgrade.Namespace, upgrade.Wait, upgrade.Timeout = v1alpha1.Namespace, true, 4*time.Minute
	if _, err := upgrade.RunWithContext(ctx, "breakglass", chrt, values(t, settings.yaml("idle: 20m"))); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, podReport(ctx, c))
	}
	step("upgraded")
	goingOn := waitResumed(ctx, t, c, second)
	step(fmt.Sprintf("the second session goes on at %s after %d hand-over(s)", goingOn.Status.Relay, goingOn.Status.Resumes))
	aliceNow := holderClient(ctx, t, c, second, token(t, issuer, alice), trust)
	typeInto(ctx, t, aliceNow, second, "echo after-$((6*8))\n", "after-48")
	if _, err := holderClient(ctx, t, c, second, token(t, issuer, bob), trust).End(ctx, second, "upgrade done"); err != nil {
		t.Fatal(err)
	}
	sess = waitEnded(t, c, second)
	requireGrantGone(ctx, t, c, app, second.Name)
	requireRecording(ctx, t, store, sess, "before-42")
	requireRecording(ctx, t, store, sess, "after-48")

	// Uninstall: nothing standing, nothing blocking pods.
	step("the second session ended with its evidence, before and after the upgrade")
	if _, err := action.NewUninstall(hc).Run("breakglass"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	hooks, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks.Items) != 0 {
		t.Errorf("%d webhook configurations left after uninstall, the first %s", len(hooks.Items), hooks.Items[0].Name)
	}
	grants := &rbacv1.RoleBindingList{}
	if err := c.Client.List(ctx, grants, client.InNamespace(app), client.HasLabels{v1alpha1.SessionLabel}); err != nil || len(grants.Items) != 0 {
		t.Errorf("grants left after uninstall: %d (%v)", len(grants.Items), err)
	}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "after-uninstall", Namespace: app},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: debug, Command: []string{"/bin/sleep", "60"}, SecurityContext: cluster.DebugSecurityContext()}}}}
	if err := c.Client.Create(ctx, plain); err != nil {
		t.Errorf("an ordinary pod after uninstall: %v", err)
	}
	t.Logf("the real-node suite took %s", time.Since(begin).Round(time.Second))
}

// e2eValues are the chart values of the test: the defaults plus a
// signing key, the evidence store, and the relay.
type e2eValues struct {
	server, debug, unsigned, registry, s3, issuer string
}

func (v e2eValues) yaml(limits string) string {
	repo, digest, _ := strings.Cut(v.server, "@")
	return fmt.Sprintf(`
image: {repository: %[1]q, digest: %[2]q}
params: {debugImages: [%[3]q, %[4]q]}
webhook:
  keysSecret: cosign-keys
  policies: [{name: debug-images, repository: %[5]q, key: /etc/breakglass/keys/cosign.pub}]
evidence:
  cluster: %[6]s
  s3: {bucket: evidence, region: us-east-1, endpoint: %[7]q, pathStyle: true}
  credentialsSecret: evidence-store
relay:
  enabled: true
  tlsSecret: relay-tls
  peerCAFile: /etc/breakglass/tls/ca.crt
  config:
    listen: ":8443"
    oidc: {issuer: %[8]q, audience: tower}
    clusters: [{name: %[6]s, tier: flight, debugImage: %[3]q}]
    permissions:
      - {groups: [shop-owners], namespaces: [shop], actions: [request]}
      - {groups: [sre], namespaces: ["*"], actions: [approve, end, review, viewSensitive]}
    recording: {s3: {bucket: evidence, region: us-east-1, endpoint: %[7]q, pathStyle: true}}
    limits: {%[9]s}
`, repo, digest, v.debug, v.unsigned, v.registry+"/breakglass/debug", e2eCluster, v.s3, v.issuer, limits)
}

// relayCertificate is the relay's serving certificate as the admin brings
// it (a kubernetes.io/tls Secret), and how a client trusts it: the CA, and
// the Service's name the certificate is for (the test dials the pod's IP).
func relayCertificate(t *testing.T) (*corev1.Secret, *tls.Config) {
	t.Helper()
	ca, err := pki.NewCA("relay-ca", time.Now().Add(-time.Minute), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// The Service's name, and the replicas' names behind the headless
	// Service they pass terminals on by.
	const name = "breakglass-relay.breakglass-system.svc"
	cert, err := ca.Issue(name, []string{name, "*.breakglass-relay-peers.breakglass-system.svc"}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "relay-tls", Namespace: v1alpha1.Namespace}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: cert.CertPEM, corev1.TLSPrivateKeyKey: cert.KeyPEM, "ca.crt": ca.PEM}},
		&tls.Config{RootCAs: roots, ServerName: name, MinVersion: tls.VersionTLS12}
}

// pushServerImage pushes the server image make image built, one index for
// linux/amd64 and linux/arm64; its reference by the index's digest, which
// the chart's values pin and the node resolves to its own platform.
func pushServerImage(t *testing.T, reg *registry.Registry) string {
	t.Helper()
	idx, _, err := image.FromLayout(filepath.Join(tools.BinDir(), "images"), "breakglass")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := reg.PushIndex("breakglass", "e2e", idx)
	if err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

// pushDebugImages pushes the debug image make image built (an index),
// signed by its digest with a key made here, and the same tools under
// another digest, unsigned; the public key's file.
func pushDebugImages(t *testing.T, reg *registry.Registry) (signed, unsigned, keyFile string) {
	t.Helper()
	idx, _, err := image.FromLayout(filepath.Join(tools.BinDir(), "images"), "breakglass-debug")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := reg.PushIndex("breakglass/debug", "1", idx)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := registry.NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	if err := signer.Sign(ref); err != nil {
		t.Fatal(err)
	}
	keyFile, err = signer.WritePublicKey(t.TempDir(), "cosign.pub")
	if err != nil {
		t.Fatal(err)
	}
	other, err := image.BuildDebug("/bin/busybox", runtime.GOARCH, time.Unix(1, 0).UTC())
	if err != nil {
		t.Fatal(err)
	}
	otherRef, err := reg.PushImage("breakglass/debug", "unsigned", other)
	if err != nil {
		t.Fatal(err)
	}
	return ref.String(), otherRef.String(), keyFile
}

func token(t *testing.T, issuer *oidcissuer.Issuer, p oidcissuer.Person) string {
	t.Helper()
	tok, err := issuer.Token(p, "tower", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
