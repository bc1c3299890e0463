package relay_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/tower-dev/breakglass/cmd/kubectl-breakglass/session"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/test/cluster"
)

// cli runs `kubectl breakglass session ARGS` as p against the relay.
func (tr *testRelay) cli(t *testing.T, p oidcissuer.Person, ns string, stdin io.Reader, args ...string) (string, error) {
	t.Helper()
	var out cluster.SyncBuffer
	err := tr.cliTo(t, &out, p, ns, stdin, args...)
	return out.String(), err
}

// cliTo runs the command with its output going to out as it runs.
func (tr *testRelay) cliTo(t *testing.T, out *cluster.SyncBuffer, p oidcissuer.Person, ns string, stdin io.Reader, args ...string) error {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token(t, p)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := session.New()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetOut(out)
	cmd.SetErr(out)
	if stdin != nil {
		cmd.SetIn(stdin)
	}
	cmd.SetArgs(append([]string{"--relay", tr.url, "--token-file", tokenFile, "--cluster", "prod", "-n", ns}, args...))
	return cmd.ExecuteContext(context.Background())
}

// TestCLIWalkthrough: the README's two-terminal walk, as commands: alice
// requests, bob lists and approves, alice starts and attaches and types,
// bob ends; refusals come back as the relay's message.
func TestCLIWalkthrough(t *testing.T) {
	ns := cl.Namespace(t, "relay-cli")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})

	out, err := tr.cli(t, alice, ns, nil, "request", "web-1", "--reason", "checkout returns 500s", "--duration", "20m")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	name := regexp.MustCompile(`session (s-[a-z0-9]+) in prod/`).FindStringSubmatch(out)
	if name == nil || !strings.Contains(out, "Pending") {
		t.Fatalf("request printed %q", out)
	}
	s := name[1]
	if out, err := tr.cli(t, alice, ns, nil, "approve", s); err == nil || !strings.Contains(err.Error(), "may not approve") {
		t.Fatalf("alice approving herself: %v %s", err, out)
	}
	out, err = tr.cli(t, bob, ns, nil, "list")
	if err != nil || !strings.Contains(out, s) || !strings.Contains(out, "checkout returns 500s") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if out, err := tr.cli(t, bob, ns, nil, "approve", s, "--comment", "ok"); err != nil || !strings.Contains(out, "approved by bob@example.com") {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	if out, err := tr.cli(t, alice, ns, nil, "start", s); err != nil || !strings.Contains(out, "Active") {
		t.Fatalf("start: %v\n%s", err, out)
	}

	inR, inW := io.Pipe()
	var attachOut cluster.SyncBuffer
	attachErr := make(chan error, 1)
	go func() { attachErr <- tr.cliTo(t, &attachOut, alice, ns, inR, "attach", s) }()
	if _, err := inW.Write([]byte("stty size; echo cli-$((20+22))\n")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(attachOut.String(), "cli-42"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no cli-42 in the attached terminal: %q", attachOut.String())
		}
	}
	// Input that is not a terminal (a pipe here) gets a usable size, not 0x0.
	if !strings.Contains(attachOut.String(), "24 80") {
		t.Fatalf("the terminal's size for piped input: %q", attachOut.String())
	}
	if out, err := tr.cli(t, bob, ns, nil, "end", s, "--reason", "seen enough"); err != nil || !strings.Contains(out, "ended by bob@example.com (approver)") {
		t.Fatalf("end: %v\n%s", err, out)
	}
	_ = inW.Close()
	if err := <-attachErr; err != nil || !strings.Contains(attachOut.String(), "the session has ended") {
		t.Fatalf("attach: %v\n%q", err, attachOut.String())
	}
	if out, err := tr.cli(t, bob, ns, nil, "review", s, "--comment", "fine"); err != nil || !strings.Contains(out, "reviewed by bob@example.com") {
		t.Fatalf("review: %v\n%s", err, out)
	}
	if _, err := tr.cli(t, alice, ns, nil, "start", "s-nothere"); err == nil || !strings.Contains(err.Error(), "no session s-nothere") {
		t.Fatalf("an unknown session: %v", err)
	}
	var noToken bytes.Buffer
	cmd := session.New()
	cmd.SetErr(&noToken)
	cmd.SetOut(&noToken)
	cmd.SetArgs([]string{"--relay", tr.url, "list"})
	t.Setenv("BREAKGLASS_TOKEN", "")
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Fatalf("without a token: %v", err)
	}
}
