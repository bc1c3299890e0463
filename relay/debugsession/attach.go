package debugsession

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/rest"
	clientremotecommand "k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/utils/exec"
)

// wsAttach is a terminal stream that speaks the API server's WebSocket
// streaming protocol (v5.channel.k8s.io, KEP-4006) itself. client-go's
// WebSocket executor held about 278 KB of heap and goroutine stacks per
// idle attach, this about 49 KB (BenchmarkAttachStream; the relay holds
// one per session), with the same echo. A server that does not upgrade to
// the protocol is an upgrade failure, for the SPDY fallback to take.
type wsAttach struct {
	config *rest.Config
	url    string
}

// The protocol's channels: each message starts with one.
const (
	wsStdin  = 0
	wsStdout = 1
	wsStderr = 2
	wsError  = 3
	wsResize = 4
	wsClose  = 255
)

// wsProtocol is the only subprotocol asked for: v5 adds the close signal
// that ends the shell's input without closing the connection.
const wsProtocol = "v5.channel.k8s.io"

// As client-go's executor: a ping every 5 s, and a connection that shows
// no sign of life for a minute is dead.
const (
	wsPingEvery = 5 * time.Second
	wsDeadAfter = 12*wsPingEvery + time.Second
)

// wsCopyBuffers are borrowed per message: an idle session holds none.
var wsCopyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func newWSAttach(config *rest.Config, url string) *wsAttach {
	return &wsAttach{config: config, url: url}
}

// Stream is StreamWithContext without a context.
func (a *wsAttach) Stream(opts clientremotecommand.StreamOptions) error {
	return a.StreamWithContext(context.Background(), opts)
}

// StreamWithContext runs the stream until the server closes it (nil, or
// the exit the error channel reported), the connection fails (its error)
// or ctx ends (ctx's error).
func (a *wsAttach) StreamWithContext(ctx context.Context, opts clientremotecommand.StreamOptions) error {
	conn, err := a.dial(ctx)
	if err != nil {
		return err
	}
	var writing sync.Mutex
	send := func(channel byte, p []byte) error {
		writing.Lock()
		defer writing.Unlock()
		if err := conn.SetWriteDeadline(time.Now().Add(wsDeadAfter)); err != nil {
			return err
		}
		w, err := conn.NextWriter(websocket.BinaryMessage)
		if err != nil {
			return err
		}
		if _, err := w.Write([]byte{channel}); err != nil {
			return err
		}
		if _, err := w.Write(p); err != nil {
			return err
		}
		return w.Close()
	}
	// Closing the connection is what stops the reader below, whoever
	// stops first: ctx, or the server. The stdin and resize goroutines
	// are not waited for, as client-go does not: they end when the caller
	// closes its stdin and size queue, their sends failing meanwhile.
	done := make(chan struct{})
	defer close(done)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	defer func() { _ = conn.Close() }()

	if opts.Stdin != nil {
		go func() {
			buf := make([]byte, 4<<10)
			for {
				n, err := opts.Stdin.Read(buf)
				if n > 0 {
					if send(wsStdin, buf[:n]) != nil {
						return
					}
				}
				if errors.Is(err, io.EOF) {
					_ = send(wsClose, []byte{wsStdin})
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}
	if opts.Tty && opts.TerminalSizeQueue != nil {
		go func() {
			for size := opts.TerminalSizeQueue.Next(); size != nil; size = opts.TerminalSizeQueue.Next() {
				msg, err := json.Marshal(size)
				if err != nil || send(wsResize, msg) != nil {
					return
				}
			}
		}()
	}
	alive := func() error { return conn.SetReadDeadline(time.Now().Add(wsDeadAfter)) }
	conn.SetPongHandler(func(string) error { return alive() })
	go func() {
		tick := time.NewTicker(wsPingEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				// A ping that times out is tried again at the next tick; a
				// closed connection ends the stream, and this with it.
				_ = conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsDeadAfter))
			}
		}
	}()

	var exit error
	for {
		if err := alive(); err != nil {
			return err
		}
		_, r, err := conn.NextReader()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case websocket.IsCloseError(err, websocket.CloseNormalClosure):
				return exit
			default:
				return fmt.Errorf("the attach stream: %w", err)
			}
		}
		var channel [1]byte
		if _, err := io.ReadFull(r, channel[:]); err != nil {
			continue // an empty message carries nothing
		}
		switch channel[0] {
		case wsStdout, wsStderr:
			out := opts.Stdout
			if channel[0] == wsStderr {
				out = opts.Stderr
			}
			if out == nil {
				out = io.Discard
			}
			buf := wsCopyBuffers.Get().(*[]byte)
			_, err := io.CopyBuffer(out, r, *buf)
			wsCopyBuffers.Put(buf)
			if err != nil {
				return err
			}
		case wsError:
			msg, err := io.ReadAll(io.LimitReader(r, 64<<10))
			if err != nil {
				return fmt.Errorf("the attach stream: %w", err)
			}
			exit = decodeExit(msg)
		}
	}
}

// dial opens the WebSocket with what client-go would send: its TLS, and
// the headers its wrappers set (a token read afresh, impersonation, the
// user agent).
func (a *wsAttach) dial(ctx context.Context) (*websocket.Conn, error) {
	tlsConfig, err := rest.TLSConfigFor(a.config)
	if err != nil {
		return nil, err
	}
	header := http.Header{}
	rt, err := rest.HTTPWrappersForConfig(a.config, roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		header = r.Header.Clone()
		return nil, errHeadersTaken
	}))
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url, nil)
	if err != nil {
		return nil, err
	}
	if resp, err := rt.RoundTrip(req); !errors.Is(err, errHeadersTaken) {
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		return nil, fmt.Errorf("the attach request's credentials: %w", err)
	}
	if header.Get("User-Agent") == "" {
		header.Set("User-Agent", rest.DefaultKubernetesUserAgent())
	}
	proxy := a.config.Proxy
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	dialer := websocket.Dialer{TLSClientConfig: tlsConfig, Proxy: proxy, Subprotocols: []string{wsProtocol},
		ReadBufferSize: 4 << 10, WriteBufferSize: 4 << 10, HandshakeTimeout: 30 * time.Second}
	url := strings.Replace(strings.Replace(a.url, "https://", "wss://", 1), "http://", "ws://", 1)
	conn, resp, err := dialer.DialContext(ctx, url, header)
	if resp != nil && resp.Body != nil {
		defer func() { _ = resp.Body.Close() }()
	}
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			err = fmt.Errorf("%w (%s: %s)", err, resp.Status, strings.TrimSpace(string(body)))
		}
		// Only a server that answered without upgrading is a reason to try
		// SPDY; one that refused (forbidden, not found) would refuse that
		// too, and one not reached (refused, TLS, a timeout) says why.
		if errors.Is(err, websocket.ErrBadHandshake) && (resp == nil || resp.StatusCode < 400 ||
			resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUpgradeRequired) {
			return nil, &httpstream.UpgradeFailureError{Cause: err}
		}
		return nil, err
	}
	if conn.Subprotocol() != wsProtocol {
		_ = conn.Close()
		return nil, &httpstream.UpgradeFailureError{Cause: fmt.Errorf("the API server speaks %q, not %s", conn.Subprotocol(), wsProtocol)}
	}
	return conn, nil
}

var errHeadersTaken = errors.New("headers taken")

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// decodeExit reads the error channel's status as client-go does: success
// is nil, a non-zero exit code an exec.CodeExitError, anything else its
// message.
func decodeExit(msg []byte) error {
	var status metav1.Status
	if err := json.Unmarshal(msg, &status); err != nil {
		return fmt.Errorf("the attach stream's error channel: %w", err)
	}
	if status.Status == metav1.StatusSuccess {
		return nil
	}
	if status.Reason == remotecommand.NonZeroExitCodeReason && status.Details != nil {
		for _, c := range status.Details.Causes {
			if c.Type != remotecommand.ExitCodeCauseType {
				continue
			}
			code, err := strconv.Atoi(c.Message)
			if err != nil {
				return fmt.Errorf("the attach stream's error channel: exit code %q", c.Message)
			}
			return exec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
		}
	}
	if status.Message == "" {
		return errors.New("the attach stream ended with an error and no message")
	}
	return errors.New(status.Message)
}
