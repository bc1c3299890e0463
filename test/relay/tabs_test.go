package relay_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"k8s.io/utils/clock"

	"github.com/tower-dev/breakglass/relay/terminal"
)

// TestSecondTabMovesTheTerminal: the requester opens her terminal in a
// second tab while the first still has it. The second is told at once why
// it may not type (not a refused handshake a page would retry for
// minutes); asked to take it (?take=1), it does: the first is told it moved
// and closes, and what she types in the second reaches the shell. A
// watcher's terminal is never moved.
func TestSecondTabMovesTheTerminal(t *testing.T) {
	ns := cl.Namespace(t, "relay-tabs")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	s := tr.started(t, ns, "web-1", "")
	first, _, err := tr.dial(t, alice, ns, s.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	first.send(t, "echo first-$((40+1))\n")
	first.waitFor(t, "first-41")
	watcher, _, err := tr.dial(t, bob, ns, s.Name, nil)
	if err != nil {
		t.Fatal(err)
	}

	second, hs, err := tr.dial(t, alice, ns, s.Name, nil)
	if err != nil {
		t.Fatalf("the second tab's terminal: %v (%d): a page reads a refused handshake as a network failure", err, hs.status)
	}
	closedWith(t, second, terminal.CloseElsewhere, "open in another tab or window")

	third, _, err := tr.dialQuery(t, alice, ns, s.Name, "take=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	closedWith(t, first, terminal.CloseMoved, "moved to another tab or window")
	// The move is audited (a keyboard taken with a stolen token shows).
	tr.audit.WaitFor(t, 10*time.Second, "the requester's keyboard moved to a new terminal")
	// The first terminal, told, takes no more input even if it goes on.
	_ = first.conn.WriteMessage(websocket.BinaryMessage, []byte("echo from-the-old-$((40+3))\n"))
	third.send(t, "echo moved-$((40+2))\n")
	third.waitFor(t, "moved-42")
	watcher.waitFor(t, "moved-42")
	if strings.Contains(watcher.output(), "from-the-old-43") {
		t.Fatalf("the moved terminal's keys reached the shell: %q", watcher.output())
	}
	select {
	case err := <-watcher.closed:
		t.Fatalf("the watcher's terminal closed: %v", err)
	default:
	}
}

// closedWith waits for tm to close with code and a reason holding why.
func closedWith(t *testing.T, tm *term, code int, why string) {
	t.Helper()
	select {
	case err := <-tm.closed:
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != code || !strings.Contains(ce.Text, why) {
			t.Fatalf("closed with %v, want %d saying %q", err, code, why)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("still open, want closed with %d", code)
	}
}
