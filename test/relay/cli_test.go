package relay_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/tower-dev/breakglass/cmd/kubectl-breakglass/login"
	"github.com/tower-dev/breakglass/cmd/kubectl-breakglass/session"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// plugin is kubectl-breakglass's login, logout and session commands.
func plugin() *cobra.Command {
	root := &cobra.Command{Use: "kubectl-breakglass", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(login.New()...)
	root.AddCommand(session.New())
	return root
}

// cliRun runs the plugin with args, its output going to out as it runs.
func cliRun(ctx context.Context, out *cluster.SyncBuffer, stdin io.Reader, args ...string) error {
	cmd := plugin()
	cmd.SetOut(out)
	cmd.SetErr(out)
	if stdin != nil {
		cmd.SetIn(stdin)
	}
	cmd.SetArgs(args)
	return cmd.ExecuteContext(ctx)
}

// person is someone at their own terminal: their login and kubeconfig.
type person struct {
	configDir, kubeconfig string
	extra                 []string
}

func (p person) run(t *testing.T, stdin io.Reader, args ...string) (string, error) {
	t.Helper()
	var out cluster.SyncBuffer
	err := cliRun(context.Background(), &out, stdin, p.args(args...)...)
	return out.String(), err
}

func (p person) args(args ...string) []string {
	if args[0] == "session" {
		args = append(args, "--config-dir", p.configDir, "--kubeconfig", p.kubeconfig)
		args = append(args, p.extra...)
	}
	return args
}

// kubeconfigFor writes a kubeconfig whose current context is the cluster
// named prod in namespace ns, and a context "eu" whose cluster has another
// name, mapped to the relay's "prod" (and to the relay) by the breakglass
// extension.
func kubeconfigFor(t *testing.T, ns, relayURL string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {server: "https://prod.example:6443"}
- name: arn:aws:eks:eu-west-1:111122223333:cluster/prod-eu
  cluster: {server: "https://eks.example:443"}
users:
- name: me
  user: {}
contexts:
- name: prod
  context: {cluster: prod, user: me, namespace: `+ns+`}
- name: eu
  context:
    cluster: arn:aws:eks:eu-west-1:111122223333:cluster/prod-eu
    user: me
    namespace: `+ns+`
    extensions:
    - name: `+session.ContextExtension+`
      extension: {cluster: prod, relay: "`+relayURL+`"}
current-context: prod
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCLIWalkthrough: the README's two-terminal walk, as commands: alice
// logs in through the browser and bob with the device flow, each with a
// kubeconfig context instead of flags; alice requests and waits to attach,
// bob lists, watches and approves, alice types in the terminal she was
// given, bob ends and reviews; a second request is denied and alice's wait
// ends with that; refusals come back as the relay's message and a stable
// exit code.
func TestCLIWalkthrough(t *testing.T) {
	ns := cl.Namespace(t, "relay-cli")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	kubeconfig := kubeconfigFor(t, ns, tr.url)
	a := person{configDir: filepath.Join(t.TempDir(), "alice"), kubeconfig: kubeconfig}
	b := person{configDir: filepath.Join(t.TempDir(), "bob"), kubeconfig: kubeconfig, extra: []string{"--context", "eu"}}

	// alice: the browser flow; the relay says where to sign in.
	var loginOut cluster.SyncBuffer
	loggedIn := make(chan error, 1)
	go func() {
		loggedIn <- cliRun(context.Background(), &loginOut, nil, "login", "--relay", tr.url, "--no-browser", "--config-dir", a.configDir)
	}()
	authURL := loginOut.WaitMatch(t, 20*time.Second, regexp.MustCompile(`(http://127\.0\.0\.1:\d+/auth\?\S+)`))[1]
	back, err := oidcissuer.SignIn(authURL, "alice")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(back.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the browser back at the CLI: %s", resp.Status)
	}
	if err := <-loggedIn; err != nil || !strings.Contains(loginOut.String(), "logged in to "+tr.url+" as alice@example.com") {
		t.Fatalf("alice's login: %v\n%s", err, loginOut.String())
	}
	// bob: the device flow, from a shell with no browser.
	var bobLogin cluster.SyncBuffer
	go func() {
		loggedIn <- cliRun(context.Background(), &bobLogin, nil, "login", "--relay", tr.url, "--device", "--config-dir", b.configDir)
	}()
	m := bobLogin.WaitMatch(t, 20*time.Second, regexp.MustCompile(`open\s+(\S+/device)\s+and enter the code\s+([A-Z]{4}-[A-Z]{4})`))
	if err := oidcissuer.SignInDevice(m[1], m[2], "bob"); err != nil {
		t.Fatal(err)
	}
	if err := <-loggedIn; err != nil {
		t.Fatalf("bob's login: %v\n%s", err, bobLogin.String())
	}

	// bob watches the namespace while alice asks.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	var watch cluster.SyncBuffer
	watched := make(chan error, 1)
	go func() {
		watched <- cliRun(watchCtx, &watch, nil, b.args("session", "list", "-w", "--watch-interval", "100ms")...)
	}()
	defer func() {
		stopWatch()
		if err := <-watched; err != nil {
			t.Errorf("list --watch: %v", err)
		}
	}()
	watch.WaitMatch(t, 20*time.Second, regexp.MustCompile(`CLUSTER\s+NAMESPACE\s+NAME`))

	inR, inW := io.Pipe()
	defer inW.Close()
	var aliceOut cluster.SyncBuffer
	attached := make(chan error, 1)
	go func() {
		attached <- cliRun(context.Background(), &aliceOut, inR, a.args("session", "request", "web-1", "--reason", "checkout returns 500s", "--duration", "20m", "--attach")...)
	}()
	s := aliceOut.WaitMatch(t, 20*time.Second, regexp.MustCompile(`session (s-[a-z0-9]+) in prod/`+ns+`: Pending`))[1]
	aliceOut.WaitMatch(t, 20*time.Second, regexp.MustCompile(`waiting for another person to approve session `+s))
	watch.WaitMatch(t, 20*time.Second, regexp.MustCompile(`prod\s+`+ns+`\s+`+s+`\s+web-1\s+live\s+Pending\s+alice@example.com\s+\d+s`))

	if out, err := a.run(t, nil, "session", "approve", s); err == nil || !strings.Contains(err.Error(), "may not approve") || session.ExitCode(err) != session.ExitRefused {
		t.Fatalf("alice approving herself: %v (exit %d) %s", err, session.ExitCode(err), out)
	}
	out, err := b.run(t, nil, "session", "list", "-o", "wide")
	if err != nil || !regexp.MustCompile(s+`\s+web-1\s+live\s+Pending\s+alice@example.com\s+\S+\s+<none>\s+false\s+false\s+<none>\s+checkout returns 500s`).MatchString(out) {
		t.Fatalf("list -o wide: %v\n%s", err, out)
	}
	out, err = b.run(t, nil, "session", "get", s, "-o", "json")
	var v wire.SessionView
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Name != s || v.Status.Phase != "Pending" || v.Spec.Reason != "checkout returns 500s" {
		t.Fatalf("get -o json: %v\n%s", err, out)
	}
	if out, err := b.run(t, nil, "session", "get", s, "-o", "name"); err != nil || out != "session/"+s+"\n" {
		t.Fatalf("get -o name: %v %q", err, out)
	}
	if out, err := b.run(t, nil, "session", "list", "-A", "-o", "yaml"); err != nil || !strings.Contains(out, "kind: List") || !strings.Contains(out, "name: "+s) {
		t.Fatalf("list -A -o yaml: %v\n%s", err, out)
	}
	if out, err := b.run(t, nil, "session", "approve", s, "--comment", "ok"); err != nil || !strings.Contains(out, "approved by bob@example.com") {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	watch.WaitMatch(t, 20*time.Second, regexp.MustCompile(s+`\s+web-1\s+live\s+(Approved|Active)\s+`))

	// alice's wait ends: the session starts and her terminal opens.
	aliceOut.WaitMatch(t, 20*time.Second, regexp.MustCompile(`starting session `+s+`: the relay grants`))
	aliceOut.WaitMatch(t, 20*time.Second, regexp.MustCompile(`started in `))
	if _, err := inW.Write([]byte("stty size; echo cli-$((20+22))\n")); err != nil {
		t.Fatal(err)
	}
	aliceOut.WaitMatch(t, 20*time.Second, regexp.MustCompile(`cli-42`))
	// What the operator sees meanwhile: one terminal open, typing.
	if n := gaugeValue(t, tr.server.Metrics(), "breakglass_relay_terminal_connections", "requester"); n != 1 {
		t.Errorf("terminal connections (requester): %v, want 1", n)
	}
	// Input that is not a terminal (a pipe here) gets a usable size, not 0x0.
	if !strings.Contains(aliceOut.String(), "24 80") {
		t.Fatalf("the terminal's size for piped input: %q", aliceOut.String())
	}
	if out, err := b.run(t, nil, "session", "end", s, "--reason", "seen enough"); err != nil || !strings.Contains(out, "ended by bob@example.com (approver)") {
		t.Fatalf("end: %v\n%s", err, out)
	}
	if err := <-attached; err != nil || !strings.Contains(aliceOut.String(), "the session has ended") {
		t.Fatalf("request --attach: %v\n%q", err, aliceOut.String())
	}
	if out, err := b.run(t, nil, "session", "review", s, "--comment", "fine"); err != nil || !strings.Contains(out, "reviewed by bob@example.com") {
		t.Fatalf("review: %v\n%s", err, out)
	}

	// A second request, denied while alice waits: her command says so, exit code 5.
	var waitOut cluster.SyncBuffer
	waited := make(chan error, 1)
	go func() {
		waited <- cliRun(context.Background(), &waitOut, nil, a.args("session", "request", "web-1", "--reason", "again", "--wait")...)
	}()
	s2 := waitOut.WaitMatch(t, 20*time.Second, regexp.MustCompile(`session (s-[a-z0-9]+) in prod/`))[1]
	if out, err := b.run(t, nil, "session", "deny", s2, "--reason", "use the dashboards"); err != nil {
		t.Fatalf("deny: %v\n%s", err, out)
	}
	if err := <-waited; session.ExitCode(err) != session.ExitDenied || !strings.Contains(err.Error(), "denied by bob@example.com: use the dashboards") {
		t.Fatalf("request --wait on a denied session: %v (exit %d)", err, session.ExitCode(err))
	}

	if _, err := a.run(t, nil, "session", "start", "s-nothere"); session.ExitCode(err) != session.ExitNotFound || !strings.Contains(err.Error(), "no session s-nothere") {
		t.Fatalf("an unknown session: %v (exit %d)", err, session.ExitCode(err))
	}
	if _, err := a.run(t, nil, "session", "list", "-o", "toml"); session.ExitCode(err) != session.ExitUsage {
		t.Fatalf("-o toml: %v (exit %d)", err, session.ExitCode(err))
	}
	if _, err := a.run(t, nil, "session", "list", "--context", "nowhere"); err == nil || !strings.Contains(err.Error(), `no context "nowhere"`) {
		t.Fatalf("an unknown context: %v", err)
	}

	// Token files and $BREAKGLASS_TOKEN still work; with none of them and
	// no login, the command says what to do.
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token(t, bob)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := (person{configDir: t.TempDir(), kubeconfig: kubeconfig}).run(t, nil, "session", "get", s, "--relay", tr.url, "--token-file", tokenFile); err != nil || !strings.Contains(out, "reviewed by bob@example.com") {
		t.Fatalf("with a token file: %v\n%s", err, out)
	}
	t.Setenv("BREAKGLASS_TOKEN", "")
	t.Setenv("BREAKGLASS_RELAY", "")
	if _, err := (person{configDir: t.TempDir(), kubeconfig: kubeconfig}).run(t, nil, "session", "list"); err == nil || !strings.Contains(err.Error(), "not logged in") {
		t.Fatalf("without a login or token: %v", err)
	}
}

// gaugeValue is the gauge name{…="label"}'s value from g.
func gaugeValue(t *testing.T, g prometheus.Gatherer, name, label string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}
