package relay_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	relayapi "github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/wire"
)

// eventStream is one open GET /api/v1/events: its session events as they
// arrive.
type eventStream struct {
	events <-chan wire.SessionEvent
	status int
	ctype  string
}

func (tr *testRelay) openEvents(t *testing.T, tok string) *eventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", tr.url+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	events := make(chan wire.SessionEvent, 16)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var e wire.SessionEvent
				if json.Unmarshal([]byte(data), &e) == nil {
					events <- e
				}
			}
		}
	}()
	return &eventStream{events: events, status: resp.StatusCode, ctype: resp.Header.Get("Content-Type")}
}

// next waits for the event about name in phase.
func (es *eventStream) next(t *testing.T, name string, phase v1alpha1.SessionPhase) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-es.events:
			if e.Name == name && e.Phase == phase {
				return
			}
		case <-deadline:
			t.Fatalf("no event for %s %s within 20s", name, phase)
		}
	}
}

// TestSessionEvents: an open page hears of a new request and of its
// approval as they happen, and only people who may see the namespace do;
// someone who may see nothing gets no stream, and one person only so many.
func TestSessionEvents(t *testing.T) {
	ns := cl.Namespace(t, "relay-events")
	cfg := config()
	cfg.Permissions = append(cfg.Permissions, relayapi.Permission{Groups: []string{"other-team"}, Namespaces: []string{"elsewhere"}, Actions: []relayapi.Action{relayapi.ActionRequest}})
	tr := startRelay(t, cfg, clock.RealClock{})
	olga := oidcissuer.Person{Email: "olga@example.com", Groups: []string{"other-team"}}
	if a := tr.call(t, "", "GET", "/api/v1/events", ""); a.status != http.StatusUnauthorized {
		t.Fatalf("events without a token: %d", a.status)
	}
	if a := tr.call(t, token(t, eve), "GET", "/api/v1/events", ""); a.status != http.StatusForbidden {
		t.Fatalf("events for eve, who may see nothing: %d", a.status)
	}
	bobs := tr.openEvents(t, token(t, bob))
	olgas := tr.openEvents(t, token(t, olga))
	for _, es := range []*eventStream{bobs, olgas} {
		if es.status != http.StatusOK || es.ctype != "text/event-stream" {
			t.Fatalf("the stream: %d %s", es.status, es.ctype)
		}
	}
	s := tr.request(t, alice, ns, "web-1", "")
	bobs.next(t, s.Name, v1alpha1.PhasePending)
	tr.must(t, http.StatusOK, token(t, bob), "POST", sessionPath(ns, s.Name)+"/approve", `{}`)
	bobs.next(t, s.Name, v1alpha1.PhaseApproved)
	select {
	case e := <-olgas.events:
		t.Fatalf("olga, who may see nothing in %s, heard of %+v", ns, e)
	case <-time.After(time.Second):
	}
	for range 7 {
		tr.openEvents(t, token(t, bob))
	}
	if a := tr.call(t, token(t, bob), "GET", "/api/v1/events", ""); a.status != http.StatusTooManyRequests {
		t.Fatalf("bob's ninth stream: %d", a.status)
	}
}
