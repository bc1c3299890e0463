package terminal

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// TestMovedTerminalTypesNoMore: once the keyboard moves to another
// terminal, this one is told (CloseMoved), nothing it sends after reaches
// the shell, and it is closed within closeWait even if it ignores the close
// and keeps sending (a client that does not cooperate keeps nothing).
func TestMovedTerminalTypesNoMore(t *testing.T) {
	sess := &fakeSession{}
	moved := make(chan struct{})
	served := make(chan time.Duration, 1)
	var at time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = Serve(w, r, sess, Options{Moved: moved})
		served <- time.Since(at)
	}))
	defer srv.Close()
	conn, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	defer conn.Close()
	send := func(s string) error { return conn.WriteMessage(websocket.BinaryMessage, []byte(s)) }
	if err := send("before"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		sess.mu.Lock()
		got := sess.in.String()
		sess.mu.Unlock()
		if got == "before" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminal got %q before the move", got)
		}
	}
	at = time.Now()
	close(moved)
	// The client ignores the close (it does not read) and keeps typing.
	for i := 0; i < 20 && send("after") == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case took := <-served:
		if took > closeWait+time.Second {
			t.Fatalf("a moved terminal stayed open %s", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a moved terminal that keeps sending stayed open")
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if got := sess.in.String(); got != "before" {
		t.Fatalf("after the move the shell got %q", got)
	}
}

// countedSession counts the viewers a terminal opens and closes.
type countedSession struct {
	fakeSession
	opened, closed atomic.Int32
}

type countedViewer struct {
	io.ReadCloser
	s *countedSession
}

func (v countedViewer) Close() error { v.s.closed.Add(1); return v.ReadCloser.Close() }

func (s *countedSession) Output() io.ReadCloser {
	s.opened.Add(1)
	return countedViewer{s.fakeSession.Output(), s}
}

func (s *countedSession) OutputFromNow() io.ReadCloser { return s.Output() }

// TestTerminalClosesEveryViewerItOpens: a terminal opens one viewer of the
// output, from now on or with the recent screen, and closes it when it
// closes: a viewer left open would count as a watcher who left.
func TestTerminalClosesEveryViewerItOpens(t *testing.T) {
	for _, fromNow := range []bool{false, true} {
		s := &countedSession{}
		served := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = Serve(w, r, s, Options{ReadOnly: true, FromNow: fromNow})
			close(served)
		}))
		conn, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		_ = conn.Close()
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Fatal("the terminal did not close with its connection")
		}
		srv.Close()
		if o, c := s.opened.Load(), s.closed.Load(); o != 1 || c != 1 {
			t.Errorf("from now %t: %d viewers opened and %d closed, want one of each", fromNow, o, c)
		}
	}
}
