package relay_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestFaultReplicaKilledIsTakenUpAtOnce: of two relay processes, the one
// running a session is killed (SIGKILL: nothing handed over). Its presence
// Lease stops being renewed; the other replica deletes it and takes the
// session up at once, long before the session's heartbeat could go stale
// (heartbeats every 30 s here: stale after 90 s, and the periodic look
// every 10 s), saying why in the resume it audits. alice's terminal at the
// other replica then reaches the new shell.
func TestFaultReplicaKilledIsTakenUpAtOnce(t *testing.T) {
	bin := buildRelay(t)
	ns := cl.Namespace(t, "relay-presence")
	cl.RunningPod(t, ns, "web-1")
	dir := t.TempDir()
	const heartbeat = 30 * time.Second
	cfgA, cfgB := config(), config()
	cfgA.Limits.Heartbeat = metav1.Duration{Duration: heartbeat}
	cfgB.Limits.Heartbeat = metav1.Duration{Duration: heartbeat}
	fileA, listenA := relayProcessConfig(t, dir, cfgA)
	fileB, listenB := relayProcessConfig(t, dir, cfgB)
	nameA, nameB := listenA[len("127.0.0.1:"):], listenB[len("127.0.0.1:"):]
	peerURL := "--peer-url=http://127.0.0.1:{replica}"
	a := startRelayProcess(t, bin, fileA, "--replica="+nameA, peerURL)
	ctx := context.Background()
	leases := cl.Kube.CoordinationV1().Leases(v1alpha1.Namespace)
	// The second replica starts once the first is present, so that it has
	// seen the first's Lease before the kill.
	waitPresent(t, nameA, a.logs.String)
	b := startRelayProcess(t, bin, fileB, "--replica="+nameB, peerURL)
	ta, tb := &testRelay{url: "http://" + listenA}, &testRelay{url: "http://" + listenB}

	s := ta.started(t, ns, "web-1", "").Name
	first := dialLoad(t, ta.url, ns, s)
	first.send([]byte("echo before-$((40+2))\n"))
	first.waitFor(t, "before-42", time.Minute)

	a.kill()
	if err := a.wait(); err == nil {
		t.Fatal("the first replica exited cleanly: it was to be killed")
	}
	killedAt := time.Now()
	// Within a heartbeat interval: not by its heartbeat going stale.
	cur := waitResumed(t, ns, s, heartbeat, b.logs.String)
	t.Logf("taken up %s after the kill", time.Since(killedAt).Round(100*time.Millisecond))
	if cur.Status.Phase != v1alpha1.PhaseActive || cur.Status.Relay != nameB || cur.Status.Resumes != 1 {
		t.Fatalf("after the take-up: %+v, want Active at %s", cur.Status, nameB)
	}
	if !strings.Contains(b.logs.String(), "its relay "+nameA+" stopped renewing its presence") {
		t.Fatalf("the resume does not say the replica was gone:\n%s", b.logs.String())
	}
	if _, err := leases.Get(ctx, "breakglass-relay-"+nameA, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the killed replica's Lease: %v, want it deleted", err)
	}

	// The terminal reconnects where the session now runs: to the new shell.
	again := redial(t, tb, ns, s)
	again.send(t, "echo after-$((2+2))\n")
	again.waitFor(t, "after-4")
	tb.must(t, http.StatusOK, token(t, bob), "POST", sessionPath(ns, s)+"/end", `{}`)
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, &cur); err != nil || cur.Status.Phase != v1alpha1.PhaseEnded {
		t.Fatalf("the end at the second replica: %v %+v", err, cur.Status)
	}
}

// TestFaultReplicaWhoseLeaseIsDeletedLetsGo: someone deletes the presence
// Lease of a replica that is alive (a cluster admin; or another replica
// that took it for gone while it was cut off). At its next renewal the
// replica finds it gone and lets go of its session at once, writing
// nothing (its terminal is told to reconnect), rather than run a shell
// another replica may be taking up; it writes its Lease again, so the
// other replica does not count it gone, and takes the session up itself in
// a new shell, saying why. Heartbeats every 30 s: nothing here waits for
// one.
func TestFaultReplicaWhoseLeaseIsDeletedLetsGo(t *testing.T) {
	ns := cl.Namespace(t, "relay-lease-deleted")
	cl.RunningPod(t, ns, "web-1")
	a, b, nameA, nameB := replicaPair(t, 30*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.server.Adopt(ctx, 300*time.Millisecond)
	go b.server.Adopt(ctx, 300*time.Millisecond)
	leases := cl.Kube.CoordinationV1().Leases(v1alpha1.Namespace)
	waitPresent(t, nameA, a.audit.String)
	waitPresent(t, nameB, b.audit.String)

	s, tm := startedSession(t, a, ns)
	tm.send(t, "echo before-$((1+1))\n")
	tm.waitFor(t, "before-2")
	if err := leases.Delete(ctx, "breakglass-relay-"+nameA, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-tm.closed:
		if !strings.Contains(err.Error(), "1013") {
			t.Fatalf("the terminal closed with %v, want 1013 (reconnect)", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the replica whose Lease was deleted kept running the session")
	}
	cur := waitResumed(t, ns, s, 20*time.Second, a.audit.String)
	if cur.Status.Phase != v1alpha1.PhaseActive || cur.Status.Relay != nameA || cur.Status.Resumes != 1 {
		t.Fatalf("after the take-up: %+v, want Active at %s (its Lease written again, %s does not count it gone)", cur.Status, nameA, nameB)
	}
	if !strings.Contains(a.audit.String(), "its relay "+nameA+" let go of it or restarted") {
		t.Fatalf("the resume does not say why:\n%s", a.audit.String())
	}
	if _, err := leases.Get(ctx, "breakglass-relay-"+nameA, metav1.GetOptions{}); err != nil {
		t.Fatalf("the replica did not write its Lease again: %v", err)
	}
	again := redial(t, b, ns, s)
	again.send(t, "echo after-$((2+2))\n")
	again.waitFor(t, "after-4")
	b.must(t, http.StatusOK, token(t, bob), "POST", sessionPath(ns, s)+"/end", `{}`)
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, &cur); err != nil || cur.Status.Phase != v1alpha1.PhaseEnded {
		t.Fatalf("the end: %v %+v", err, cur.Status)
	}
	m, _, err := recording.ReadManifest(ctx, a.store, recording.RefOf("prod", &cur), cur.Status.Evidence)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.ForeignSegments) > 0 {
		t.Fatalf("a replica that let go wrote on: foreign segments %v", m.ForeignSegments)
	}
}

// waitPresent waits for replica's presence Lease; logs says what the
// replica did, should it not come.
func waitPresent(t *testing.T, replica string, logs func() string) {
	t.Helper()
	leases := cl.Kube.CoordinationV1().Leases(v1alpha1.Namespace)
	if err := cluster.Within(30*time.Second, func() (bool, error) {
		_, err := leases.Get(context.Background(), "breakglass-relay-"+replica, metav1.GetOptions{})
		return err == nil, err
	}); err != nil {
		t.Fatalf("replica %s wrote no presence Lease: %v\n%s", replica, err, logs())
	}
}
