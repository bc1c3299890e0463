package relay_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// The fault suite (make test-faults runs every TestFault* of the
// repository). Each case here ends with requireWhole: the session ended
// with its evidence, its grant gone, the recording whole (no missing or
// foreign segment; the output the person saw is in it, byte for byte), and
// the relay's audit chain verifying.

// startedSession is a live session on web-1 in ns, alice typing.
func startedSession(t *testing.T, tr *testRelay, ns string) (string, *term) {
	t.Helper()
	s := tr.started(t, ns, "web-1", "").Name
	tm, _, err := tr.dial(t, alice, ns, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, tm
}

// redial opens alice's terminal again once the relay holds the session
// (after a resume it may answer NotRunHere for a moment, as clients expect).
func redial(t *testing.T, tr *testRelay, ns, s string) *term {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		tm, hs, err := tr.dial(t, alice, ns, s, nil)
		if err == nil {
			return tm
		}
		if hs.status != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("reconnecting alice's terminal: %v (status %d)\n%s", err, hs.status, tr.audit.String())
		}
	}
}

// waitResumed waits up to within for session s to be taken up by a relay
// (status.resumes above 0) and returns it; logs says what the relays did,
// should it not be.
func waitResumed(t *testing.T, ns, s string, within time.Duration, logs func() string) v1alpha1.Session {
	t.Helper()
	return *cl.WaitSession(t, ns, s, within, "not taken up", func(s *v1alpha1.Session) bool { return s.Status.Resumes > 0 }, logs)
}

// requireWhole ends the session (bob) and checks what every fault case
// must leave: evidence, no grant, the recording whole and holding every
// byte the terminals showed (seen, in order, across reconnections), and
// an audit chain that verifies.
func requireWhole(t *testing.T, tr *testRelay, ns, s string, seen []byte) *v1alpha1.Session {
	t.Helper()
	ctx := context.Background()
	tr.must(t, http.StatusOK, token(t, bob), "POST", sessionPath(ns, s)+"/end", `{"reason":"fault case done"}`)
	var cur v1alpha1.Session
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, &cur); err != nil {
		t.Fatal(err)
	}
	if cur.Status.Phase != v1alpha1.PhaseEnded || cur.Status.Evidence == nil || cur.Status.Evidence.ManifestSHA256 == "" {
		t.Fatalf("the session after the fault: %+v", cur.Status)
	}
	if _, err := cl.Kube.RbacV1().RoleBindings(ns).Get(ctx, cur.Status.Grant.RoleBinding, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("grant %s after the session ended: %v, want it gone", cur.Status.Grant.RoleBinding, err)
	}
	out, m := recordedOutput(t, tr.store, &cur)
	if len(m.MissingSegments) > 0 || len(m.ForeignSegments) > 0 {
		t.Fatalf("the recording: missing %v, foreign %v", m.MissingSegments, m.ForeignSegments)
	}
	// What a terminal showed is one stretch of output; a marker could only
	// sit between two.
	if i := strings.Index(out, "<MARKER "); i >= 0 {
		out = out[:i] + out[i+strings.Index(out[i:], ">")+1:]
	}
	if !strings.Contains(out, string(seen)) {
		t.Fatalf("the recording's output (%d bytes, sha256 %x) does not hold what the terminal showed (%d bytes, sha256 %x)",
			len(out), sha256.Sum256([]byte(out)), len(seen), sha256.Sum256(seen))
	}
	if _, err := audit.Verify(strings.NewReader(tr.audit.String())); err != nil {
		t.Fatalf("the audit chain: %v", err)
	}
	return &cur
}

// TestFaultAPIServerRestartMidSession: kube-apiserver restarts while alice
// types. Her attach stream (through the API server) breaks, and with it the
// debug container's shell; the relay writes out what it read, releases the
// session once the API server answers again, and takes it up itself in a
// new debug container, under the same grant and recording. Her terminal is
// told why and to reconnect; her next line runs in the new shell.
func TestFaultAPIServerRestartMidSession(t *testing.T) {
	ns := cl.Namespace(t, "fault-apiserver")
	cl.RunningPod(t, ns, "web-1")
	cfg := config()
	cfg.Limits.Heartbeat = metav1.Duration{Duration: time.Second}
	tr := startRelay(t, cfg, clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go tr.server.Adopt(ctx, 300*time.Millisecond)
	s, tm := startedSession(t, tr, ns)
	tm.send(t, "echo one-$((1+1))\n")
	tm.waitFor(t, "one-2")

	restarted := time.Now()
	if err := cl.RestartAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver restarted in %s", time.Since(restarted).Round(100*time.Millisecond))
	select {
	case err := <-tm.closed:
		if !strings.Contains(err.Error(), "1013") || !strings.Contains(err.Error(), "stream to the pod broke") {
			t.Fatalf("alice's terminal closed with %v, want 1013 and why", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("alice's terminal was not told the stream broke")
	}
	var cur v1alpha1.Session
	for deadline := time.Now().Add(60 * time.Second); cur.Status.Resumes == 0 || cur.Status.Released != nil; time.Sleep(200 * time.Millisecond) {
		_ = cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, &cur)
		if time.Now().After(deadline) {
			t.Fatalf("the session was not taken up after the restart: %+v\n%s", cur.Status, tr.audit.String())
		}
	}
	t.Logf("taken up again %s after the restart began", time.Since(restarted).Round(100*time.Millisecond))
	if cur.Status.Phase != v1alpha1.PhaseActive {
		t.Fatalf("after the restart: %+v", cur.Status)
	}
	again := redial(t, tr, ns, s)
	again.send(t, "echo two-$((2+2))\n")
	again.waitFor(t, "two-4")
	requireWhole(t, tr, ns, s, []byte("two-4"))
	if !strings.Contains(tm.output(), "one-2") || !strings.Contains(tr.audit.String(), `"kind":"release"`) {
		t.Fatalf("before the restart %q; audit:\n%s", tm.output(), tr.audit.String())
	}
}

// TestFaultViewerCut: the network to bob, watching, is cut (his TCP
// connection closed under the WebSocket). The session does not notice
// beyond counting one viewer less; alice goes on; bob reconnects and sees
// what comes next.
func TestFaultViewerCut(t *testing.T) {
	ns := cl.Namespace(t, "fault-viewer")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	s, tm := startedSession(t, tr, ns)
	watching, _, err := tr.dial(t, bob, ns, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	tm.send(t, "echo seen-$((3+3))\n")
	watching.waitFor(t, "seen-6")
	_ = watching.conn.UnderlyingConn().Close()
	viewers := func() int {
		var v wire.SessionView
		if err := json.Unmarshal(tr.must(t, http.StatusOK, token(t, bob), "GET", sessionPath(ns, s), "").body, &v); err != nil || v.Live == nil {
			t.Fatalf("the live view: %v", err)
		}
		return v.Live.Viewers
	}
	cluster.Eventually(t, 10*time.Second, "alice alone watching after bob's connection was cut", func() (bool, error) {
		n := viewers()
		return n == 1, fmt.Errorf("%d viewers", n)
	})
	tm.send(t, "echo alone-$((4+4))\n")
	tm.waitFor(t, "alone-8")
	back, _, err := tr.dial(t, bob, ns, s, nil)
	if err != nil {
		t.Fatalf("bob reconnecting: %v", err)
	}
	tm.send(t, "echo back-$((5+5))\n")
	back.waitFor(t, "back-10")
	if n := viewers(); n != 2 {
		t.Fatalf("%d viewers after bob reconnected, want 2", n)
	}
	requireWhole(t, tr, ns, s, []byte(tm.output()))
}

// TestFaultDiskFullMidSession: the relay's write-once recording directory
// (a real filesystem, a 2 MiB tmpfs) fills up mid-session. The terminal
// goes on (what it carries is kept in memory), output past a segment is
// not lost; once space is freed the held segments are written, and the
// recording holds every byte alice saw, with no gap.
func TestFaultDiskFullMidSession(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this case mounts a small tmpfs to fill: it needs root, as make test runs here")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=2m,mode=0700"); err != nil {
		t.Fatalf("mounting a tmpfs to fill: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, 0) })
	ns := cl.Namespace(t, "fault-disk")
	cl.RunningPod(t, ns, "web-1")
	cfg := config()
	cfg.Recording.Dir = dir
	tr := startRelay(t, cfg, clock.RealClock{})
	s, tm := startedSession(t, tr, ns)
	tm.send(t, "echo start-$((6+6))\n")
	tm.waitFor(t, "start-12")

	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	_ = f.Close()
	// About 150 KB of output: more than two segments' worth, all while the
	// disk is full.
	tm.send(t, "seq 1 25000; echo full-$((7+7))\n")
	tm.waitFor(t, "full-14")
	time.Sleep(6 * time.Second) // a flush (every 5 s) meets the full disk
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	tm.send(t, "echo freed-$((8+8))\n")
	tm.waitFor(t, "freed-16")
	time.Sleep(6 * time.Second) // a flush writes what was held
	requireWhole(t, tr, ns, s, []byte(tm.output()))
	if !strings.Contains(tm.output(), "\r\n25000\r\n") {
		t.Fatalf("the terminal did not show all of seq's output")
	}
}
