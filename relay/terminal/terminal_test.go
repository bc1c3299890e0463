package terminal

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestSilentWatcherIsGone: a connection that answers no ping (a laptop
// asleep, a network gone) is closed within pongWait, so it stops counting
// as watching; one that reads (and so answers pings) stays.
func TestSilentWatcherIsGone(t *testing.T) {
	pingEvery, pongWait = 50*time.Millisecond, 300*time.Millisecond
	defer func() { pingEvery, pongWait = 10*time.Second, 30*time.Second }()
	served := make(chan time.Duration, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		_ = Serve(w, r, &fakeSession{}, Options{ReadOnly: true})
		served <- time.Since(start)
	}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")

	silent, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	defer silent.Close()
	// Never read: gorilla answers a ping only while reading.
	select {
	case took := <-served:
		if took < pongWait {
			t.Fatalf("closed after %s, before pongWait", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a connection that answers no ping stayed open")
	}

	live, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	defer live.Close()
	go func() {
		for {
			if _, _, err := live.ReadMessage(); err != nil {
				return
			}
		}
	}()
	select {
	case took := <-served:
		t.Fatalf("a connection that answers pings was closed after %s", took)
	case <-time.After(4 * pongWait):
	}
	// Its handler ends with it, before the timings are put back.
	_ = live.Close()
	<-served
}
