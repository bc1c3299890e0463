package debugsession_test

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestStreamClosedAtGrantExpiry: a Session that claims a hard stop later
// than its grant's TTL still ends at the TTL: the attach stream is closed,
// the Session ended at the hard stop, and the debug shell, whose input
// closed with the stream, is gone from the node (the pod is kept, so only
// the closed input can have ended it).
func TestStreamClosedAtGrantExpiry(t *testing.T) {
	f := startOnFakeClock(t, cl.Namespace(t, "ttl"), true)
	s, run, clk, ctx := f.s, f.run, f.clock, context.Background()
	if _, err := run.Write([]byte("echo marker-$((20+3)) && sleep 1000\n")); err != nil {
		t.Fatal(err)
	}
	out := run.Output(requester)
	defer out.Close()
	waitOutput(t, out, "marker-23")
	// The echo is seen before the shell has started sleep: wait for it, or
	// the test proves nothing.
	cluster.Eventually(t, 10*time.Second, "the debug shell's command runs", func() (bool, error) {
		return shellRunning(t, "sleep 1000"), nil
	})
	expires := run.Session.Status.Grant.ExpiresAt.Time
	later := metav1.NewTime(expires.Add(time.Hour))
	run.Session.Status.Deadline = &later // what the Session claims
	ended := f.watch(t, debugsession.Limits{Idle: 24 * time.Hour, Disconnect: 24 * time.Hour, Heartbeat: time.Hour, Flush: time.Hour})
	for step := clk.Now(); !step.After(expires); step = step.Add(30 * time.Second) {
		f.waitLooking()
		clk.SetTime(step)
	}
	f.waitLooking()
	clk.SetTime(expires.Add(time.Second))
	select {
	case reason := <-ended:
		if reason != v1alpha1.EndHardStop {
			t.Fatalf("ended by %s", reason)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the stream was still open after the grant expired")
	}
	got := &v1alpha1.Session{}
	if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.PhaseEnded || got.Status.End.Reason != v1alpha1.EndHardStop {
		t.Fatalf("the end: %+v", got.Status.End)
	}
	cluster.Eventually(t, 10*time.Second, "the debug shell ends with its session's stream", func() (bool, error) {
		return !shellRunning(t, "sleep 1000"), nil
	})
}

// shellRunning reports whether a process of the virtual node runs cmd.
func shellRunning(t *testing.T, cmd string) bool {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", cmd).Output()
	return strings.TrimSpace(string(out)) != ""
}

// waitOutput reads the terminal until it shows want, for at most 20s.
func waitOutput(t *testing.T, out io.Reader, want string) {
	t.Helper()
	found := make(chan struct{})
	go func() {
		var seen strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := out.Read(buf)
			seen.Write(buf[:n])
			if strings.Contains(seen.String(), want) {
				close(found)
				_, _ = io.Copy(io.Discard, out)
				return
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-found:
	case <-time.After(20 * time.Second):
		t.Fatalf("no %q on the terminal", want)
	}
}
