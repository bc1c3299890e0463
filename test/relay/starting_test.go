package relay_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// TestTerminalWhileStarting: the Session is Active in the cluster a moment
// before the relay has attached its terminal, and a page that reads it
// Active opens the terminal at once (the console walk was answered 409
// there). Held at that moment (the start's attach not yet audited), a
// terminal opened by the requester waits for the start and works. Then a
// reconnect made the moment the old terminal closes gets the requester's
// one terminal instead of a 409.
func TestTerminalWhileStarting(t *testing.T) {
	ns := cl.Namespace(t, "relay-terminal-starting")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	ctx := context.Background()
	s := tr.request(t, alice, ns, "web-1", "").Name
	path := sessionPath(ns, s)
	tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/approve", `{}`)

	reached, release := tr.gate.hold(`"kind":"attach","actor":"` + v1alpha1.PortalUsername + `"`)
	defer release()
	started := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", tr.url+path+"/start", nil)
		req.Header.Set("Authorization", "Bearer "+token(t, alice))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			started <- 0
			return
		}
		_ = resp.Body.Close()
		started <- resp.StatusCode
	}()
	select {
	case <-reached:
	case code := <-started:
		t.Fatalf("the start answered %d before auditing its attach", code)
	case <-time.After(60 * time.Second):
		t.Fatal("the start did not reach its attach within 60s")
	}
	var cur v1alpha1.Session
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, &cur); err != nil || cur.Status.Phase != v1alpha1.PhaseActive {
		t.Fatalf("the Session while the start is held: %v %s, want Active", err, cur.Status.Phase)
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		release()
	}()
	tm, hs, err := tr.dial(t, alice, ns, s, nil)
	if err != nil {
		t.Fatalf("the terminal opened while the start is recorded: %d %v", hs.status, err)
	}
	if code := <-started; code != http.StatusOK {
		t.Fatalf("the start: %d", code)
	}
	tm.send(t, "echo started-$((6*7))\n")
	tm.waitFor(t, "started-42")

	// A reload: the old terminal closes and the new one opens at once.
	_ = tm.conn.Close()
	again, hs, err := tr.dial(t, alice, ns, s, nil)
	if err != nil {
		t.Fatalf("the terminal reopened at once: %d %v", hs.status, err)
	}
	again.send(t, "echo again-$((6*7))\n")
	again.waitFor(t, "again-42")
	if strings.Contains(tr.audit.String(), `"kind":"refusal"`) {
		t.Fatalf("a refusal was audited:\n%s", tr.audit.String())
	}
	tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/end", "")
}
