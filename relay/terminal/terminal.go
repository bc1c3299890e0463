// Package terminal relays a session's terminal to a browser over a
// WebSocket, in the shape xterm.js's attach addon speaks: binary frames
// carry the bytes both ways; a text frame carries a small JSON control
// message, {"type":"resize","cols":120,"rows":40}. The relay answers a bad
// control message with {"type":"error","message":...} and carries on.
package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Session is the terminal being relayed.
type Session interface {
	// Write sends the person's keystrokes.
	Write(p []byte) (int, error)
	Resize(ctx context.Context, cols, rows uint16) error
	// Output is a new viewer of the recent screen, then the output from
	// now on; closing it leaves.
	Output() io.ReadCloser
	// OutputFromNow is a new viewer of the output from now on only.
	OutputFromNow() io.ReadCloser
}

// Options shape one connection.
type Options struct {
	// ReadOnly connections watch: an approver sees the terminal, never types.
	ReadOnly bool
	// Subprotocol is answered to a client that offers it.
	Subprotocol string
	// CheckOrigin decides whether a browser origin may connect.
	CheckOrigin func(r *http.Request) bool
	// Count is told how many bytes went each way ("in", "out").
	Count func(direction string, n int)
	// FromNow shows the connection no output from before it joined.
	FromNow bool
	// Notices are control messages the relay tells the browser unasked
	// (a moderated session's input held or let through); optional.
	Notices <-chan Control
	// Moved, when it closes, ends the connection with CloseMoved: the
	// person opened the terminal to type elsewhere and moved it there.
	Moved <-chan struct{}
}

// errMoved ends a terminal whose keyboard moved to another (Options.Moved).
var errMoved = errors.New("the terminal moved to another tab or window")

// ErrHeld is what a Session's Write answers for keystrokes it does not
// pass on now (a moderated session with no moderator watching): the
// browser is told why, and the connection goes on.
var ErrHeld = errors.New("input held")

// MaxFrame bounds what the browser may send in one frame: keystrokes and
// pastes are small; a larger frame closes the connection with 1009.
const MaxFrame = 64 << 10

// writeWait bounds one frame's write; a browser that takes longer is gone.
const writeWait = 30 * time.Second

// A connection is pinged every pingEvery and is gone when nothing, not even
// a pong, came for pongWait: a watcher whose laptop slept or whose network
// dropped stops counting as watching (a moderated session holds the
// requester's input again) within pongWait, not when TCP gives up.
// Browsers and gorilla's clients answer pings by themselves.
var (
	pingEvery = 10 * time.Second
	pongWait  = 30 * time.Second
)

// closeWait is how long a connection whose output ended (the session
// ended, or the viewer fell behind) waits for the browser's close.
const closeWait = 2 * time.Second

// Control is a text frame's message.
type Control struct {
	Type    string `json:"type"`
	Cols    uint16 `json:"cols,omitempty"`
	Rows    uint16 `json:"rows,omitempty"`
	Message string `json:"message,omitempty"`
}

// ParseControl reads a control message from the browser: a resize to at
// least 1x1, nothing else. The error says what is wrong, quoting no more
// of the frame than a short prefix.
func ParseControl(p []byte) (Control, error) {
	var c Control
	if err := json.Unmarshal(p, &c); err != nil {
		return Control{}, fmt.Errorf("a text frame is a JSON control message: %s", truncate(err.Error(), 200))
	}
	switch {
	case c.Type != "resize":
		return Control{}, fmt.Errorf("unknown control message type %q; the only one is resize", truncate(c.Type, 40))
	case c.Cols == 0 || c.Rows == 0:
		return Control{}, fmt.Errorf("a terminal is at least 1x1, not %dx%d", c.Cols, c.Rows)
	}
	return Control{Type: c.Type, Cols: c.Cols, Rows: c.Rows}, nil
}

// Close codes the relay ends a connection with, besides the standard ones.
const (
	// CloseEnded: the session ended; its reason is in the close message.
	CloseEnded = websocket.CloseNormalClosure
	// CloseTooSlow: the browser fell behind and was cut off; it may reconnect.
	CloseTooSlow = websocket.CloseTryAgainLater
	// CloseElsewhere: the requester's terminal is open to type in another
	// tab or window; a page offers to move it here (and must not retry on
	// its own, or two tabs would take it from each other for ever).
	CloseElsewhere = 4001
	// CloseMoved: the person moved their terminal to another tab or window.
	CloseMoved = 4002
)

// Serve upgrades the request and relays until the session ends or the
// browser leaves. The session goes on when a browser leaves: reconnecting
// within the disconnect limit resumes it.
func Serve(w http.ResponseWriter, r *http.Request, s Session, o Options) error {
	conn, err := upgrader(o).Upgrade(w, r, nil)
	if err != nil {
		return err // the upgrader answered the request
	}
	defer conn.Close()
	conn.SetReadLimit(MaxFrame)
	alive := func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) }
	_ = alive("")
	conn.SetPongHandler(alive)
	count := o.Count
	if count == nil {
		count = func(string, int) {}
	}
	// One viewer per terminal: each one counts (toward the watchers a
	// moderated session waits for, and the disconnect limit) until closed.
	var out io.ReadCloser
	if o.FromNow {
		out = s.OutputFromNow()
	} else {
		out = s.Output()
	}
	writerDone := make(chan struct{})
	// writes serializes frames: the output pump and the reader's error
	// replies share one connection.
	writes := make(chan func() error, 1)
	go func() {
		defer close(writerDone)
		pumpOutput(conn, out, writes, count)
	}()
	stopNotices := make(chan struct{})
	if o.Notices != nil {
		go forwardNotices(conn, o.Notices, writes, writerDone, stopNotices)
	}
	go keepAlive(conn, writerDone, stopNotices)
	if o.Moved != nil {
		go func() {
			select {
			case <-o.Moved:
				// Told, then cut after closeWait whatever the browser does:
				// the reader takes no input from here on (readInput).
				_ = conn.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(CloseMoved, "moved to another tab or window"), time.Now().Add(time.Second))
				time.AfterFunc(closeWait, func() { _ = conn.Close() })
			case <-stopNotices:
			}
		}()
	}
	err = readInput(r.Context(), conn, s, o.ReadOnly, o.Moved, writes, writerDone, count)
	close(stopNotices)
	_ = out.Close()
	<-writerDone
	return err
}

func upgrader(o Options) *websocket.Upgrader {
	up := &websocket.Upgrader{
		ReadBufferSize: 4096, WriteBufferSize: 32 << 10,
		// A write buffer only while writing: an idle terminal holds none
		// (docs/benchmarks.md, memory per session).
		WriteBufferPool: writeBuffers,
		CheckOrigin:     o.CheckOrigin,
	}
	if o.Subprotocol != "" {
		up.Subprotocols = []string{o.Subprotocol}
	}
	return up
}

// Ended answers a terminal asked for after its session ended as a
// terminal open at the end closes: upgraded, then closed with CloseEnded
// and why. A page that read the session a moment before its end then stops,
// where an HTTP refusal of the handshake would read to it as a network
// failure to retry.
func Ended(w http.ResponseWriter, r *http.Request, o Options, why string) error {
	return Refuse(w, r, o, CloseEnded, why)
}

// Refuse answers a terminal the relay will not open now as Ended does, with
// its own close code (CloseElsewhere): the page reads why, where a refused
// handshake would read to it as a network failure to retry.
func Refuse(w http.ResponseWriter, r *http.Request, o Options, code int, why string) error {
	conn, err := upgrader(o).Upgrade(w, r, nil)
	if err != nil {
		return err // the upgrader answered the request
	}
	defer conn.Close()
	return conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, truncate(why, 120)), time.Now().Add(5*time.Second))
}

// writeBuffers are the terminals' WebSocket write buffers, shared.
var writeBuffers = &sync.Pool{}

// readChunk is how much of the output one read takes: it is held while
// the terminal idles, so kept small; a larger burst takes several frames.
const readChunk = 8 << 10

func pumpOutput(conn *websocket.Conn, out io.Reader, writes <-chan func() error, count func(string, int)) {
	chunks := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		buf := make([]byte, readChunk)
		for {
			n, err := out.Read(buf)
			if n > 0 {
				chunks <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				readErr <- err
				close(chunks)
				return
			}
		}
	}()
	for {
		select {
		case chunk, ok := <-chunks:
			if !ok {
				closeFor(conn, <-readErr)
				return
			}
			_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := conn.WriteMessage(websocket.BinaryMessage, chunk); err != nil {
				drain(chunks)
				return
			}
			count("out", len(chunk))
		case write := <-writes:
			if err := write(); err != nil {
				drain(chunks)
				return
			}
		}
	}
}

// drain lets the output reader finish once the connection is gone.
func drain(chunks <-chan []byte) {
	go func() {
		for range chunks {
		}
	}()
}

// forwardNotices sends the relay's notices as text frames, through the
// one writer of the connection, until the connection's reader is done.
func forwardNotices(conn *websocket.Conn, notices <-chan Control, writes chan<- func() error, writerDone, stop <-chan struct{}) {
	for {
		select {
		case c := <-notices:
			select {
			case writes <- textFrame(conn, c):
			case <-writerDone:
				return
			case <-stop:
				return
			}
		case <-writerDone:
			return
		case <-stop:
			return
		}
	}
}

// keepAlive pings the browser until the connection's reader is done; once
// the output has ended, the reader waits closeWait for the browser's close.
func keepAlive(conn *websocket.Conn, writerDone, stop <-chan struct{}) {
	tick := time.NewTicker(pingEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			_ = conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait))
		case <-writerDone:
			_ = conn.SetReadDeadline(time.Now().Add(closeWait))
			return
		case <-stop:
			return
		}
	}
}

// textFrame is the write of one control message, for the connection's one writer.
func textFrame(conn *websocket.Conn, c Control) func() error {
	b, _ := json.Marshal(c)
	return func() error {
		_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
		return conn.WriteMessage(websocket.TextMessage, b)
	}
}

// closeFor tells the browser why its stream ended.
func closeFor(conn *websocket.Conn, why error) {
	code, text := CloseEnded, "the session has ended"
	switch {
	case errors.Is(why, io.EOF):
	case errors.Is(why, io.ErrClosedPipe):
		return // the browser left first
	default:
		code, text = CloseTooSlow, why.Error()
	}
	msg := websocket.FormatCloseMessage(code, truncate(text, 120))
	_ = conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
}

// truncate keeps a close reason within a control frame's 125 bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func readInput(ctx context.Context, conn *websocket.Conn, s Session, readOnly bool, moved <-chan struct{}, writes chan<- func() error, writerDone <-chan struct{}, count func(string, int)) error {
	reply := func(c Control) {
		select {
		case writes <- textFrame(conn, c):
		case <-writerDone:
		}
	}
	for {
		kind, p, err := conn.ReadMessage()
		select {
		case <-moved:
			// The keyboard moved to another terminal: nothing more from
			// this one reaches the shell, and it is not kept open.
			return errMoved
		default:
		}
		select {
		case <-writerDone: // the output ended: closeWait stands
		default:
			if err == nil {
				_ = conn.SetReadDeadline(time.Now().Add(pongWait))
			}
		}
		if err != nil {
			if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) {
				return nil
			}
			return err
		}
		switch kind {
		case websocket.BinaryMessage:
			if readOnly {
				reply(Control{Type: "error", Message: "this terminal is read-only: only the requester types"})
				continue
			}
			if _, err := s.Write(p); errors.Is(err, ErrHeld) {
				reply(Control{Type: "held", Message: err.Error()})
				continue
			} else if err != nil {
				return err
			}
			count("in", len(p))
		case websocket.TextMessage:
			c, err := ParseControl(p)
			switch {
			case err != nil:
				reply(Control{Type: "error", Message: err.Error()})
			case readOnly:
				// The requester's terminal sets the size; a watcher's window does not.
			default:
				if err := s.Resize(ctx, c.Cols, c.Rows); err != nil {
					reply(Control{Type: "error", Message: err.Error()})
				}
			}
		}
	}
}
