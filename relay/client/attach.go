package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/gorilla/websocket"

	"github.com/tower-dev/breakglass/relay/terminal"
	"github.com/tower-dev/breakglass/relay/wire"
)

// Size is a terminal's size.
type Size struct{ Cols, Rows uint16 }

// Ended is how a terminal ended: the session's end, or the relay cutting a
// slow client off (reconnect to continue).
type Ended struct {
	Code   int
	Reason string
}

func (e *Ended) Error() string { return fmt.Sprintf("the terminal closed: %s (%d)", e.Reason, e.Code) }

// Attach opens t's terminal and relays until it closes: in goes to the
// terminal (nil to watch), the terminal's output to out, sizes from
// resize. Error messages from the relay go to notes. It returns *Ended
// when the relay closed the terminal.
func (c *Client) Attach(ctx context.Context, t Target, in io.Reader, out, notes io.Writer, resize <-chan Size) error {
	u := "ws" + strings.TrimPrefix(strings.TrimSuffix(c.BaseURL, "/"), "http") + t.path() + "/terminal"
	d := websocket.Dialer{Subprotocols: []string{wire.TerminalProtocol}, TLSClientConfig: c.TLS}
	h := c.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Authorization", "Bearer "+c.Token)
	conn, resp, err := d.DialContext(ctx, u, h)
	if resp != nil {
		defer resp.Body.Close()
	}
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			var e struct {
				Error struct{ Reason, Message string } `json:"error"`
			}
			if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
				return &Error{Status: resp.StatusCode, Reason: e.Error.Reason, Message: e.Error.Message}
			}
		}
		return fmt.Errorf("opening the terminal: %w", err)
	}
	defer conn.Close()
	done := make(chan struct{})
	defer close(done)
	var wmu sync.Mutex
	write := func(kind int, p []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return conn.WriteMessage(kind, p)
	}
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				_ = conn.Close()
				return
			case s, ok := <-resize:
				if !ok {
					return
				}
				b, _ := json.Marshal(terminal.Control{Type: "resize", Cols: s.Cols, Rows: s.Rows})
				if write(websocket.TextMessage, b) != nil {
					return
				}
			}
		}
	}()
	if in != nil {
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := in.Read(buf)
				if n > 0 && write(websocket.BinaryMessage, buf[:n]) != nil {
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}
	for {
		kind, p, err := conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return &Ended{Code: ce.Code, Reason: ce.Text}
			}
			return err
		}
		if kind == websocket.TextMessage {
			var m terminal.Control
			if json.Unmarshal(p, &m) == nil && (m.Type == "error" || m.Type == "held" || m.Type == "moderated") && notes != nil {
				fmt.Fprintln(notes, "relay:", m.Message)
			}
			continue
		}
		if _, err := out.Write(p); err != nil {
			return err
		}
	}
}
