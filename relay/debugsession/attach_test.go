package debugsession

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/rest"
	clientremotecommand "k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/utils/exec"
)

// fakeAttachServer speaks the API server's side of v5.channel.k8s.io:
// serve runs on each connection, with the request's headers.
func fakeAttachServer(t *testing.T, protocols []string, serve func(conn *websocket.Conn, r *http.Request)) *rest.Config {
	t.Helper()
	up := websocket.Upgrader{Subprotocols: protocols}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		serve(conn, r)
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, BearerToken: "tok", Impersonate: rest.ImpersonationConfig{UserName: "system:serviceaccount:breakglass-system:tower-breakglass"}}
}

type sizes chan *clientremotecommand.TerminalSize

func (s sizes) Next() *clientremotecommand.TerminalSize { return <-s }

func status(st metav1.Status) []byte {
	b, _ := json.Marshal(st)
	return append([]byte{wsError}, b...)
}

func closeNormally(conn *websocket.Conn) {
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
}

// TestWSAttachSpeaksV5: what is typed goes out on stdin, a resize on its
// channel as client-go encodes it, the end of input as the close signal;
// the output arrives, and a success on the error channel then a normal
// close ends the stream without an error. Credentials and impersonation
// go as client-go sends them.
func TestWSAttachSpeaksV5(t *testing.T) {
	got := make(chan [][]byte, 1)
	impersonated := make(chan string, 1)
	cfg := fakeAttachServer(t, []string{"v4.channel.k8s.io", wsProtocol}, func(conn *websocket.Conn, r *http.Request) {
		impersonated <- r.Header.Get("Impersonate-User")
		if err := conn.WriteMessage(websocket.BinaryMessage, append([]byte{wsStdout}, "hi\r\n"...)); err != nil {
			t.Error(err)
		}
		var msgs [][]byte
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				t.Error(err)
				break
			}
			msgs = append(msgs, msg)
			if msg[0] == wsClose {
				break
			}
		}
		got <- msgs
		_ = conn.WriteMessage(websocket.BinaryMessage, status(metav1.Status{Status: metav1.StatusSuccess}))
		closeNormally(conn)
	})
	stdin, typed := io.Pipe()
	q := make(sizes, 1)
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- newWSAttach(cfg, cfg.Host+"/api/v1/namespaces/shop/pods/web-1/attach").StreamWithContext(context.Background(),
			clientremotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Tty: true, TerminalSizeQueue: q})
	}()
	q <- &clientremotecommand.TerminalSize{Width: 120, Height: 40}
	time.Sleep(50 * time.Millisecond) // the resize goes before the typing
	if _, err := typed.Write([]byte("ls\n")); err != nil {
		t.Fatal(err)
	}
	_ = typed.Close()
	msgs := <-got
	want := [][]byte{append([]byte{wsResize}, `{"Width":120,"Height":40}`...), append([]byte{wsStdin}, "ls\n"...), {wsClose, wsStdin}}
	if len(msgs) != len(want) {
		t.Fatalf("the server read %q, want %q", msgs, want)
	}
	for i := range want {
		if !bytes.Equal(msgs[i], want[i]) {
			t.Errorf("message %d: %q, want %q", i, msgs[i], want[i])
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("a shell that exited cleanly: %v", err)
	}
	if out.String() != "hi\r\n" {
		t.Errorf("output %q", out.String())
	}
	if who := <-impersonated; who != "system:serviceaccount:breakglass-system:tower-breakglass" {
		t.Errorf("impersonating %q", who)
	}
}

func TestWSAttachEnds(t *testing.T) {
	attach := func(t *testing.T, cfg *rest.Config, ctx context.Context) error {
		stdin, _ := io.Pipe()
		return newWSAttach(cfg, cfg.Host+"/attach").StreamWithContext(ctx, clientremotecommand.StreamOptions{Stdin: stdin, Stdout: io.Discard, Tty: true})
	}
	t.Run("a non-zero exit is the exit's code", func(t *testing.T) {
		cfg := fakeAttachServer(t, []string{wsProtocol}, func(conn *websocket.Conn, _ *http.Request) {
			_ = conn.WriteMessage(websocket.BinaryMessage, status(metav1.Status{Status: metav1.StatusFailure, Reason: remotecommand.NonZeroExitCodeReason,
				Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: remotecommand.ExitCodeCauseType, Message: "2"}}}}))
			closeNormally(conn)
		})
		var exit exec.CodeExitError
		if err := attach(t, cfg, context.Background()); !errors.As(err, &exit) || exit.Code != 2 {
			t.Fatalf("%v, want exit code 2", err)
		}
	})
	t.Run("a server without v5 is an upgrade failure, for the SPDY fallback", func(t *testing.T) {
		cfg := fakeAttachServer(t, []string{"v4.channel.k8s.io"}, func(*websocket.Conn, *http.Request) {})
		if err := attach(t, cfg, context.Background()); !httpstream.IsUpgradeFailure(err) {
			t.Fatalf("%v, want an upgrade failure", err)
		}
	})
	t.Run("a refusal is no upgrade failure, and says why", func(t *testing.T) {
		cfg := fakeAttachServer(t, []string{wsProtocol}, func(*websocket.Conn, *http.Request) {})
		cfg.BearerToken = "stolen"
		err := attach(t, cfg, context.Background())
		if err == nil || httpstream.IsUpgradeFailure(err) || !bytes.Contains([]byte(err.Error()), []byte("403")) {
			t.Fatalf("%v, want the 403", err)
		}
	})
	t.Run("a server not reached is no upgrade failure", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		cfg := &rest.Config{Host: srv.URL, BearerToken: "tok"}
		srv.Close()
		if err := attach(t, cfg, context.Background()); err == nil || httpstream.IsUpgradeFailure(err) {
			t.Fatalf("%v, want the connection's error, not a fallback to SPDY", err)
		}
	})
	t.Run("a connection dropped is an error", func(t *testing.T) {
		cfg := fakeAttachServer(t, []string{wsProtocol}, func(conn *websocket.Conn, _ *http.Request) {
			_ = conn.UnderlyingConn().Close()
		})
		if err := attach(t, cfg, context.Background()); err == nil {
			t.Fatal("a dropped connection ended the stream without an error")
		}
	})
	t.Run("the caller's end is its context's", func(t *testing.T) {
		hold := make(chan struct{})
		t.Cleanup(func() { close(hold) })
		cfg := fakeAttachServer(t, []string{wsProtocol}, func(*websocket.Conn, *http.Request) { <-hold })
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		if err := attach(t, cfg, ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("%v, want context.Canceled", err)
		}
	})
}
