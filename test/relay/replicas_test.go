package relay_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/live"
	"github.com/tower-dev/breakglass/relay/terminal"
	"github.com/tower-dev/breakglass/relay/wire"
)

// replicaPair starts two replicas of the relay on one cluster and one
// recording store. They are named by their ports, so that the peer URL
// http://127.0.0.1:{replica} reaches each (in a cluster, a pod name and a
// headless Service do).
func replicaPair(t *testing.T, heartbeat time.Duration) (a, b *testRelay, nameA, nameB string) {
	t.Helper()
	shared := t.TempDir()
	start := func() (*testRelay, string) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		cfg := config()
		cfg.Recording.Dir = shared
		cfg.Limits.Heartbeat = metav1.Duration{Duration: heartbeat}
		return startReplica(t, cfg, clock.RealClock{}, &live.Peers{Self: port, URL: "http://127.0.0.1:{replica}"}, ln), port
	}
	a, nameA = start()
	b, nameB = start()
	return a, b, nameA, nameB
}

// TestFaultReplicasPassTerminalsAndHandOver: two replicas behind one Service.
// A session started through one runs there (status.relay names it); the
// requester's terminal, an approver watching, the live countdowns and the
// end, reaching the other replica, are passed to it. When the replica
// running the session shuts down it hands the session over instead of
// ending it: everything it read is written out, the Session is marked
// released, its terminals are told to reconnect, and the other replica
// takes it up at once, in a new debug container under the same grant and
// recording, with no gap.
func TestFaultReplicasPassTerminalsAndHandOver(t *testing.T) {
	ns := cl.Namespace(t, "relay-replicas")
	cl.RunningPod(t, ns, "web-1")
	cl.RunningPod(t, ns, "web-2")
	a, b, nameA, nameB := replicaPair(t, time.Second)
	ctx := context.Background()

	s := b.request(t, alice, ns, "web-1", "").Name
	b.must(t, http.StatusOK, token(t, bob), "POST", sessionPath(ns, s)+"/approve", `{}`)
	a.must(t, http.StatusOK, token(t, alice), "POST", sessionPath(ns, s)+"/start", "")
	var cur v1alpha1.Session
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, &cur); err != nil {
		t.Fatal(err)
	}
	if cur.Status.Relay != nameA {
		t.Fatalf("the session runs at %q, want the replica that started it, %q", cur.Status.Relay, nameA)
	}

	// Through the other replica: alice types, bob watches, both see it.
	typing, _, err := b.dial(t, alice, ns, s, nil)
	if err != nil {
		t.Fatalf("alice's terminal through the other replica: %v", err)
	}
	watching, _, err := b.dial(t, bob, ns, s, nil)
	if err != nil {
		t.Fatalf("bob watching through the other replica: %v", err)
	}
	typing.send(t, "echo via-$((20+3))\n")
	typing.waitFor(t, "via-23")
	watching.waitFor(t, "via-23")
	// One typing terminal per session, whichever replica it reaches: the
	// second is told why it may not type.
	second, _, err := a.dial(t, alice, ns, s, nil)
	if err != nil {
		t.Fatalf("a second typing terminal: %v", err)
	}
	closedWith(t, second, terminal.CloseElsewhere, "open in another tab or window")
	got := b.must(t, http.StatusOK, token(t, bob), "GET", sessionPath(ns, s), "")
	var v wire.SessionView
	if err := json.Unmarshal(got.body, &v); err != nil || v.Live == nil || v.Live.Viewers != 2 {
		t.Fatalf("the live view through the other replica: %v %s", err, got.body)
	}
	// A request already passed on once is not passed on again.
	if _, hs, err := b.dial(t, bob, ns, s, http.Header{"Breakglass-Relay-Hop": {nameA}}); err == nil || hs.status != http.StatusConflict {
		t.Fatalf("a passed-on terminal at a replica not running the session: %v, status %d", err, hs.status)
	}

	// An end with a body, reaching the replica not running the session,
	// is passed on whole.
	other := b.request(t, alice, ns, "web-2", "").Name
	b.must(t, http.StatusOK, token(t, bob), "POST", sessionPath(ns, other)+"/approve", `{}`)
	a.must(t, http.StatusOK, token(t, alice), "POST", sessionPath(ns, other)+"/start", "")
	b.must(t, http.StatusOK, token(t, bob), "POST", sessionPath(ns, other)+"/end", `{"reason":"seen enough, from the other replica"}`)
	var otherNow v1alpha1.Session
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: other}, &otherNow); err != nil || otherNow.Status.Phase != v1alpha1.PhaseEnded {
		t.Fatalf("the session ended through the other replica: %v %+v", err, otherNow.Status)
	}

	// The replica running it shuts down: it hands the session over.
	adopting, stopAdopting := context.WithCancel(ctx)
	defer stopAdopting()
	a.server.Close(ctx)
	for _, tm := range []*term{typing, watching} {
		select {
		case err := <-tm.closed:
			if !strings.Contains(err.Error(), "1013") {
				t.Fatalf("a terminal at the hand-over closed with %v, want 1013 (reconnect)", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a terminal stayed open after its replica let go")
		}
	}
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, &cur); err != nil {
		t.Fatal(err)
	}
	if cur.Status.Phase != v1alpha1.PhaseActive || cur.Status.Released == nil || cur.Status.Relay != "" || cur.Status.End != nil {
		t.Fatalf("after the hand-over: %+v", cur.Status)
	}
	endedHere := false
	for _, line := range strings.Split(a.audit.String(), "\n") {
		endedHere = endedHere || (strings.Contains(line, `"kind":"end"`) && strings.Contains(line, `"session":"`+ns+"/"+s+`"`))
	}
	if !strings.Contains(a.audit.String(), `"kind":"release"`) || endedHere {
		t.Fatalf("the replica that shut down audited:\n%s", a.audit.String())
	}
	// The other replica takes it up at its next look, not after the
	// heartbeat goes stale (3 s here).
	releasedAt := time.Now()
	go b.server.Adopt(adopting, 200*time.Millisecond)
	cur = waitResumed(t, ns, s, 20*time.Second, b.audit.String)
	if took := time.Since(releasedAt); took > 2*time.Second {
		t.Errorf("the released session was taken up after %s: as if its heartbeat had to go stale", took)
	}
	if cur.Status.Relay != nameB || cur.Status.Released != nil {
		t.Fatalf("after the take-up: relay %q released %v, want %q and none", cur.Status.Relay, cur.Status.Released, nameB)
	}
	again, _, err := b.dial(t, alice, ns, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	again.send(t, "echo then-$((5+5))\n")
	again.waitFor(t, "then-10")
	b.must(t, http.StatusOK, token(t, bob), "POST", sessionPath(ns, s)+"/end", `{}`)

	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, &cur); err != nil {
		t.Fatal(err)
	}
	out, m := recordedOutput(t, b.store, &cur)
	if cur.Status.Phase != v1alpha1.PhaseEnded || len(m.MissingSegments) > 0 || len(m.ForeignSegments) > 0 {
		t.Fatalf("the end: %s, missing %v, foreign %v", cur.Status.Phase, m.MissingSegments, m.ForeignSegments)
	}
	before, after, ok := strings.Cut(out, "<MARKER ")
	if !ok || !strings.Contains(before, "via-23") || !strings.Contains(after, "then-10") || !strings.Contains(after, "wrote out all it had read") {
		t.Fatalf("the recording across the hand-over:\n%s", out)
	}
}
