package notify

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

var testAt = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// makeSession is a pending request for pod web-1 in shop.
func makeSession(name string, edit ...func(*v1alpha1.Session)) *v1alpha1.Session {
	return sessiontest.Make("shop", name).Requester("alice@example.com", "").With(edit...).Obj()
}

// makeNotice is the notice of kind about makeSession(name).
func makeNotice(kind, name string, edit ...func(*v1alpha1.Session)) Notice {
	n := newNotice(Event{Kind: kind, Cluster: "flight-1", To: "approvers"}, makeSession(name, edit...), Links{PortalURL: "https://tower.example"}, testAt)
	n.Approvers = "shop-oncall"
	return n
}

// writeFile writes content to a file of its own and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// request is what a test HTTP server received.
type request struct {
	header http.Header
	path   string
	body   []byte
}

// recorder is a loopback HTTP server that hands each request to the
// test on a channel and answers with answer(n), n counting from 0.
func recorder(t *testing.T, answer func(n int, w http.ResponseWriter)) (*httptest.Server, <-chan request) {
	t.Helper()
	got := make(chan request, 100)
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		got <- request{header: r.Header.Clone(), path: r.URL.Path, body: body}
		answer(i, w)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// receive waits for the next request, failing the test after a while.
func receive(t *testing.T, got <-chan request) request {
	t.Helper()
	select {
	case r := <-got:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no request arrived")
	}
	return request{}
}

// eventually waits until cond holds (a condition on another goroutine's
// progress, not a time), failing the test after a while.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// decode unmarshals JSON into a generic tree, for schema checks.
func decode(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
	return v
}
