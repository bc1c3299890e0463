package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/relay"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// relayProcess is the real relay (cmd/breakglass) in a process of its own,
// so that the test can kill it as a node drain or an OOM kill would.
type relayProcess struct {
	cmd  *exec.Cmd
	logs *cluster.SyncBuffer
	done chan error
	// metrics is its /metrics URL.
	metrics string
}

// buildRelay builds the server once for the test.
func buildRelay(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "breakglass")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/tower-dev/breakglass/cmd/breakglass").CombinedOutput()
	if err != nil {
		t.Fatalf("building the relay: %v\n%s", err, out)
	}
	return bin
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startRelayProcess runs bin as the relay with configFile (and args) and
// waits until it is ready.
func startRelayProcess(t testing.TB, bin, configFile string, args ...string) *relayProcess {
	t.Helper()
	health, metrics := freePort(t), freePort(t)
	p := &relayProcess{logs: &cluster.SyncBuffer{}, done: make(chan error, 1), metrics: "http://" + metrics + "/metrics"}
	p.cmd = exec.Command(bin, append([]string{"relay", "--config", configFile, "--metrics-bind-address", metrics, "--health-probe-bind-address", health}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.kill(); _ = p.wait() })
	if err := cluster.Within(30*time.Second, func() (bool, error) {
		resp, err := http.Get("http://" + health + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("readyz answered %s", resp.Status)
	}); err != nil {
		t.Fatalf("the relay did not get ready: %v\n%s", err, p.logs.String())
	}
	return p
}

// relayProcessConfig writes cfg as the configuration file of a relay in a
// process of its own, in dir: on a free port, reaching the test cluster as
// the portal through a kubeconfig, recording to dir/recordings. It returns
// the file and the address the relay listens on.
func relayProcessConfig(t testing.TB, dir string, cfg *relay.Config) (string, string) {
	t.Helper()
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["prod"] = &clientcmdapi.Cluster{Server: portal.Config.Host, CertificateAuthorityData: portal.Config.CAData}
	// The test's admin acting as the portal's ServiceAccount, as cl.Portal does.
	kc.AuthInfos["portal"] = &clientcmdapi.AuthInfo{ClientCertificateData: portal.Config.CertData, ClientKeyData: portal.Config.KeyData,
		Token: portal.Config.BearerToken, Impersonate: portal.Config.Impersonate.UserName, ImpersonateGroups: portal.Config.Impersonate.Groups,
		ImpersonateUserExtra: portal.Config.Impersonate.Extra}
	kc.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "portal"}
	kc.CurrentContext = "prod"
	kubeconfig := filepath.Join(dir, "portal.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	listen := freePort(t)
	cfg.Listen = listen
	cfg.Clusters[0].Kubeconfig = kubeconfig
	cfg.Recording = relay.Recording{Dir: filepath.Join(dir, "recordings")}
	if err := os.MkdirAll(cfg.Recording.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(dir, "relay-"+strings.ReplaceAll(listen, ":", "-")+".yaml")
	if err := os.WriteFile(configFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return configFile, listen
}

// kill ends the process at once, as SIGKILL does: nothing of it runs after.
func (p *relayProcess) kill() { _ = p.cmd.Process.Signal(syscall.SIGKILL) }

func (p *relayProcess) wait() error {
	select {
	case err := <-p.done:
		return err
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the relay did not stop")
	}
}

// TestFaultRelayKilledMidSessionResumes: the relay running a live session is
// killed (SIGKILL) while alice types; another relay process takes the
// session up once its heartbeat is stale: a new debug container in the same
// pod under the same grant, hard stop and recording; alice's terminal
// reconnects and goes on; bob ends it. The recording holds what she typed
// before (flushed) and after, a marker where the second relay took over,
// and no missing or foreign segment; the audit chain of the second relay
// verifies; the grant is gone and the pod recycled at the end.
func TestFaultRelayKilledMidSessionResumes(t *testing.T) {
	bin := buildRelay(t)
	ns := cl.Namespace(t, "relay-restart")
	cl.RunningPod(t, ns, "web-1")
	dir := t.TempDir()

	cfg := config()
	cfg.Limits.Heartbeat = metav1.Duration{Duration: time.Second}
	configFile, listen := relayProcessConfig(t, dir, cfg)
	tr := &testRelay{url: "http://" + listen}

	first := startRelayProcess(t, bin, configFile)
	s := tr.started(t, ns, "web-1", "").Name
	// alice's terminal is the CLI's attach, which reconnects.
	tokenFile := filepath.Join(dir, "alice.token")
	if err := os.WriteFile(tokenFile, []byte(token(t, alice)), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, typed := io.Pipe()
	defer typed.Close()
	var screen cluster.SyncBuffer
	attached := make(chan error, 1)
	go func() {
		attached <- cliRun(context.Background(), &screen, keys, "session", "attach", s, "--relay", tr.url, "--token-file", tokenFile,
			"--cluster", "prod", "-n", ns, "--config-dir", t.TempDir())
	}()
	if _, err := typed.Write([]byte("echo before-$((40+2))\n")); err != nil {
		t.Fatal(err)
	}
	screen.WaitFor(t, 20*time.Second, "before-42")
	time.Sleep(6 * time.Second) // the relay writes a segment every 5 s

	first.kill()
	if err := first.wait(); err == nil {
		t.Fatal("the relay exited cleanly: it was to be killed")
	}
	screen.WaitFor(t, 20*time.Second, "reconnecting: the session goes on")

	killedAt := time.Now()
	second := startRelayProcess(t, bin, configFile)
	ctx := context.Background()
	cur := waitResumed(t, ns, s, 30*time.Second, second.logs.String)
	resumedIn := time.Since(killedAt)
	if cur.Status.Phase != v1alpha1.PhaseActive || cur.Status.Resumes != 1 || cur.Status.Deadline == nil {
		t.Fatalf("after the resume: %+v", cur.Status)
	}
	t.Logf("resumed %s after the kill", resumedIn.Round(100*time.Millisecond))

	// alice's terminal has reconnected to the session, in its new shell;
	// what she types now reaches it.
	if _, err := typed.Write([]byte("echo after-$((2+2)) as $(id -u)\n")); err != nil {
		t.Fatal(err)
	}
	screen.WaitFor(t, 20*time.Second, "after-4 as")
	tr.must(t, http.StatusOK, token(t, bob), "POST", sessionPath(ns, s)+"/end", `{"reason":"seen enough"}`)
	if err := <-attached; err != nil {
		t.Fatalf("alice's attach after the end: %v\n%s", err, screen.String())
	}

	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, &cur); err != nil {
		t.Fatal(err)
	}
	if cur.Status.Phase != v1alpha1.PhaseEnded || cur.Status.Evidence == nil || cur.Status.Evidence.ManifestSHA256 == "" {
		t.Fatalf("the end: %+v", cur.Status)
	}
	store := &recording.Dir{Root: cfg.Recording.Dir}
	text, m := recordedOutput(t, store, &cur)
	if len(m.MissingSegments) > 0 || len(m.ForeignSegments) > 0 {
		t.Fatalf("the recording: missing %v, foreign %v", m.MissingSegments, m.ForeignSegments)
	}
	before, after, marker := strings.Cut(text, "<MARKER ")
	if !marker || !strings.Contains(before, "before-42") || !strings.Contains(after, "after-4 as") {
		t.Fatalf("the recording across the restart:\n%s", text)
	}
	// The second relay's audit chain (its stdout) verifies and tells the resume.
	var lines bytes.Buffer
	for _, l := range strings.Split(second.logs.String(), "\n") {
		if strings.HasPrefix(l, `{"seq":`) {
			lines.WriteString(l + "\n")
		}
	}
	chain := lines.String()
	if _, err := audit.Verify(strings.NewReader(chain)); err != nil || !strings.Contains(chain, `"kind":"resume"`) {
		t.Fatalf("the second relay's audit: %v\n%s", err, chain)
	}
}

// TestFaultRelayThatMissedItsHeartbeatsLetsGo: two relays on one cluster; the
// one running a session writes its heartbeat too seldom, so the other takes
// the session up. At its next heartbeat the first finds the Session taken
// (its write at the old version is refused) and lets go without writing
// anything: its terminal is told to reconnect, its attach closes (a real
// runtime then ends that stdinOnce shell; the virtual node does not model
// a detach by a cancelled stream), and it adds nothing to the recording. The session goes on at the second relay and
// ends there with a whole recording: one shell at a time, one writer.
func TestFaultRelayThatMissedItsHeartbeatsLetsGo(t *testing.T) {
	ns := cl.Namespace(t, "relay-fence")
	cl.RunningPod(t, ns, "web-1")
	shared := t.TempDir()
	slow := config()
	slow.Recording.Dir = shared
	slow.Limits.Heartbeat = metav1.Duration{Duration: 8 * time.Second}
	first := startRelay(t, slow, clock.RealClock{})
	quick := config()
	quick.Recording.Dir = shared
	quick.Limits.Heartbeat = metav1.Duration{Duration: time.Second}
	second := startRelay(t, quick, clock.RealClock{})

	s, tm := startedSession(t, first, ns)
	tm.send(t, "echo first-$((1+1))\n")
	tm.waitFor(t, "first-2")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go second.server.Adopt(ctx, 300*time.Millisecond)
	var closed error
	select {
	case closed = <-tm.closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the first relay did not let go of the session")
	}
	if !strings.Contains(closed.Error(), "1013") || !strings.Contains(closed.Error(), "another relay took the session up") {
		t.Fatalf("the first relay's terminal closed with %v, want 1013 and a reason to reconnect", closed)
	}
	var cur v1alpha1.Session
	if err := cl.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: s}, &cur); err != nil {
		t.Fatal(err)
	}
	if cur.Status.Phase != v1alpha1.PhaseActive || cur.Status.Resumes != 1 {
		t.Fatalf("after the first relay let go: %+v\nfirst:\n%s\nsecond:\n%s", cur.Status, first.audit.String(), second.audit.String())
	}

	again, _, err := second.dial(t, alice, ns, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	again.send(t, "echo second-$((2+2))\n")
	again.waitFor(t, "second-4")
	second.must(t, http.StatusOK, token(t, bob), "POST", sessionPath(ns, s)+"/end", `{}`)
	if err := cl.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: s}, &cur); err != nil {
		t.Fatal(err)
	}
	m, _, err := recording.ReadManifest(context.Background(), second.store, recording.RefOf("prod", &cur), cur.Status.Evidence)
	if err != nil {
		t.Fatal(err)
	}
	// What the first relay wrote after the second took the session up (it
	// had not yet noticed) is kept out of the recording, named in the
	// manifest as foreign, its numbers marked as gaps: never a silent hole,
	// never two writers in one recording.
	if cur.Status.Phase != v1alpha1.PhaseEnded || len(m.ForeignSegments) != 2*len(m.MissingSegments) {
		t.Fatalf("the end: %+v, missing %v, foreign %v", cur.Status.Phase, m.MissingSegments, m.ForeignSegments)
	}
	for _, n := range m.MissingSegments {
		name := fmt.Sprintf("%08d.cast", n)
		if !slices.Contains(m.ForeignSegments, name) {
			t.Fatalf("gap %d is not the first relay's late segment: foreign %v", n, m.ForeignSegments)
		}
	}
	transcript, err := recording.ReadFile(context.Background(), second.store, recording.RefOf("prod", &cur), m, recording.TranscriptFile)
	if err != nil || !bytes.Contains(transcript, []byte("second-4")) {
		t.Fatalf("the recording at the second relay: %v %q", err, transcript)
	}
	if strings.Contains(first.audit.String(), `"kind":"end"`) {
		t.Fatalf("the relay that let go wrote an end:\n%s", first.audit.String())
	}
}
