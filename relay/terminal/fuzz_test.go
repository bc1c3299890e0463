package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// FuzzParseControl: any text frame is a valid resize or a short error;
// never a panic, a zero size, or a frame quoted whole back to the browser.
func FuzzParseControl(f *testing.F) {
	for _, seed := range []string{
		`{"type":"resize","cols":120,"rows":40}`, `{"type":"resize","cols":0,"rows":40}`, `{"type":"resize","cols":70000,"rows":1}`,
		`{"type":"input","data":"ls"}`, `{"type":"resize","cols":-1}`, `{}`, `[]`, `null`, `"resize"`, `{"type":"resize","cols":1e3,"rows":2}`,
		`{"type":"resize","cols":"80","rows":24}`, `{"type":"resize","cols":80,"rows":24}{}`, "\xff\xfe", strings.Repeat(`{"type":"`, 200),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		c, err := ParseControl(p)
		if err != nil {
			if c != (Control{}) {
				t.Fatalf("an error with a message %+v", c)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("an error of %d bytes quotes too much of the frame", len(err.Error()))
			}
			return
		}
		if c.Type != "resize" || c.Cols == 0 || c.Rows == 0 || c.Message != "" {
			t.Fatalf("accepted %q as %+v", p, c)
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := ParseControl(again); err != nil || back != c {
			t.Fatalf("%+v does not survive its own encoding: %+v %v", c, back, err)
		}
	})
}

// fakeSession records what a browser's frames did to the terminal.
type fakeSession struct {
	mu      sync.Mutex
	in      bytes.Buffer
	resizes []string
}

func (s *fakeSession) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.in.Write(p)
}

func (s *fakeSession) Resize(_ context.Context, cols, rows uint16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resizes = append(s.resizes, string(rune(cols))+"x"+string(rune(rows)))
	return nil
}

// Output writes nothing until the viewer leaves.
func (s *fakeSession) Output() io.ReadCloser {
	r, _ := io.Pipe()
	return r
}

func (s *fakeSession) OutputFromNow() io.ReadCloser { return s.Output() }

// FuzzFrames sends frames as a browser would, through a real WebSocket:
// binary frames reach the terminal byte for byte (never from a watcher),
// text frames resize it or are answered, and the connection survives both.
func FuzzFrames(f *testing.F) {
	f.Add(true, []byte("ls -l\r"), `{"type":"resize","cols":80,"rows":24}`, false)
	f.Add(true, []byte{0, 1, 2, 0xff}, `not json`, true)
	f.Add(false, []byte(""), `{"type":"resize","cols":0,"rows":0}`, false)
	f.Add(true, bytes.Repeat([]byte("x"), MaxFrame), `{"type":"close"}`, false)
	var mu sync.Mutex
	var sess *fakeSession
	var readOnly bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		s, ro := sess, readOnly
		mu.Unlock()
		_ = Serve(w, r, s, Options{ReadOnly: ro})
	}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	f.Fuzz(func(t *testing.T, binaryFirst bool, data []byte, text string, watcher bool) {
		if len(data) > MaxFrame {
			return // closes with 1009, tested on its own
		}
		s := &fakeSession{}
		mu.Lock()
		sess, readOnly = s, watcher
		mu.Unlock()
		conn, resp, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		defer conn.Close()
		send := []func() error{
			func() error { return conn.WriteMessage(websocket.BinaryMessage, data) },
			func() error { return conn.WriteMessage(websocket.TextMessage, []byte(text)) },
		}
		if !binaryFirst {
			send[0], send[1] = send[1], send[0]
		}
		for _, f := range send {
			if err := f(); err != nil {
				t.Fatal(err)
			}
		}
		_, parseErr := ParseControl([]byte(text))
		wantReplies := 0
		if parseErr != nil {
			wantReplies++
		}
		if watcher && len(data) > 0 {
			wantReplies++
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for i := 0; i < wantReplies; i++ {
			kind, msg, err := conn.ReadMessage()
			if err != nil {
				t.Fatalf("reply %d of %d: %v", i+1, wantReplies, err)
			}
			var c Control
			if kind != websocket.TextMessage || json.Unmarshal(msg, &c) != nil || c.Type != "error" || c.Message == "" {
				t.Fatalf("a reply that is not an error message: %d %q", kind, msg)
			}
		}
		if err := conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")); err != nil {
			t.Fatal(err)
		}
		// The relay has read every frame once the close comes back.
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				break
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		wantIn := data
		if watcher {
			wantIn = nil
		}
		if !bytes.Equal(s.in.Bytes(), wantIn) {
			t.Fatalf("the terminal got %q, want %q", s.in.Bytes(), wantIn)
		}
		if resized := len(s.resizes) == 1; resized != (parseErr == nil && !watcher) {
			t.Fatalf("resizes %q for %q (watcher %v)", s.resizes, text, watcher)
		}
	})
}
