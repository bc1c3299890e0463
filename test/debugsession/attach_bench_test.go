package debugsession_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/relay/live"
	"github.com/tower-dev/breakglass/test/harness/measure"
)

// The API server's streaming protocol over WebSocket (KEP-4006): every
// message starts with its channel.
const (
	channelStdin  = 0
	channelStdout = 1
)

// leanAttach is an attach that speaks the API server's WebSocket protocol
// (v5.channel.k8s.io) itself, with one reader goroutine and small gorilla
// buffers, to measure what client-go's attach costs beyond the protocol
// (issue 27, target 5). It is a measuring stick, not the relay's client:
// it has no SPDY fallback, no resize, no ping.
type leanAttach struct {
	conn *websocket.Conn
	out  *io.PipeReader
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func dialLeanAttach(ctx context.Context, cfg *rest.Config, url string) (*leanAttach, error) {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	// The headers client-go would send (a token, impersonation), taken
	// from its own wrappers.
	var header http.Header
	rt, err := rest.HTTPWrappersForConfig(cfg, roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		header = r.Header.Clone()
		return nil, errors.New("headers taken")
	}))
	if err != nil {
		return nil, err
	}
	probe, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if resp, _ := rt.RoundTrip(probe); resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	dialer := websocket.Dialer{TLSClientConfig: tlsConfig, Subprotocols: []string{"v5.channel.k8s.io"},
		ReadBufferSize: 1024, WriteBufferSize: 1024, HandshakeTimeout: 10 * time.Second}
	conn, resp, err := dialer.DialContext(ctx, strings.Replace(url, "https://", "wss://", 1), header)
	if resp != nil && resp.Body != nil {
		defer func() { _ = resp.Body.Close() }()
	}
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			return nil, fmt.Errorf("%w: %s: %s", err, resp.Status, body)
		}
		return nil, err
	}
	r, w := io.Pipe()
	go func() {
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				_ = w.CloseWithError(err)
				return
			}
			if len(msg) > 1 && msg[0] == channelStdout {
				if _, err := w.Write(msg[1:]); err != nil {
					return
				}
			}
		}
	}()
	return &leanAttach{conn: conn, out: r}, nil
}

func (a *leanAttach) Write(p []byte) (int, error) {
	if err := a.conn.WriteMessage(websocket.BinaryMessage, append([]byte{channelStdin}, p...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// clientGoAttach is the relay's way: client-go's WebSocket executor.
type clientGoAttach struct {
	in  *io.PipeWriter
	out *io.PipeReader
}

func dialClientGoAttach(ctx context.Context, cfg *rest.Config, url string) (*clientGoAttach, error) {
	exec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", url)
	if err != nil {
		return nil, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		_ = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Tty: true})
		_ = outW.Close()
	}()
	return &clientGoAttach{in: inW, out: outR}, nil
}

func (a *clientGoAttach) Write(p []byte) (int, error) { return a.in.Write(p) }

// attachKinds are the two ways to attach, by name.
var attachKinds = map[string]func(ctx context.Context, cfg *rest.Config, url string) (io.Writer, io.Reader, error){
	"client-go": func(ctx context.Context, cfg *rest.Config, url string) (io.Writer, io.Reader, error) {
		a, err := dialClientGoAttach(ctx, cfg, url)
		if err != nil {
			return nil, nil, err
		}
		return a, a.out, nil
	},
	"lean": func(ctx context.Context, cfg *rest.Config, url string) (io.Writer, io.Reader, error) {
		a, err := dialLeanAttach(ctx, cfg, url)
		if err != nil {
			return nil, nil, err
		}
		return a, a.out, nil
	},
}

// attachChildEnv names the file that makes the test binary an attach
// child (TestMain): a process that holds idle attaches of one kind and
// reports their heap and stacks, so nothing else in the process (the
// virtual node above all) is counted.
const attachChildEnv = "BREAKGLASS_ATTACH_CHILD"

type attachOrder struct {
	Kind string                   `json:"kind"`
	N    int                      `json:"n"`
	URL  string                   `json:"url"`
	Host string                   `json:"host"`
	TLS  rest.TLSClientConfig     `json:"tls"`
	As   rest.ImpersonationConfig `json:"as"`
}

// attachChild holds the attaches its order asks for, prints the bytes of
// heap and stacks each added, and keeps them open until its stdin closes.
func attachChild() int {
	var o attachOrder
	b, err := os.ReadFile(os.Getenv(attachChildEnv))
	if err == nil {
		err = json.Unmarshal(b, &o)
	}
	dial := attachKinds[o.Kind]
	if err != nil || dial == nil {
		fmt.Fprintf(os.Stderr, "attach child: %v (kind %q)\n", err, o.Kind)
		return 2
	}
	cfg := &rest.Config{Host: o.Host, TLSClientConfig: o.TLS, Impersonate: o.As}
	ctx := context.Background()
	before := measure.HeapInUse()
	for range o.N {
		_, out, err := dial(ctx, cfg, o.URL)
		if err != nil {
			fmt.Fprintf(os.Stderr, "attach child: %v\n", err)
			return 1
		}
		go func() { _, _ = io.Copy(io.Discard, out) }()
	}
	time.Sleep(500 * time.Millisecond) // the streams settle
	fmt.Printf("%d\n", (measure.HeapInUse()-before)/uint64(o.N))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// BenchmarkAttachStream: what a terminal stream costs with client-go's
// attach (the relay's) and with the lean one, to the same debug container
// through the real API server and the virtual node: a key's echo, taking
// turns, and the heap and stacks of 50 idle attaches of each, each kind
// in a process of its own.
func BenchmarkAttachStream(b *testing.B) {
	const idle = 50
	ns := cl.Namespace(b, fmt.Sprintf("attach-bench-%d", time.Now().UnixNano()%1000000))
	s := approvedSession(b, ns, false)
	r := runner(b, &recording.Dir{Root: b.TempDir()}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run, err := live.Start(ctx, r, s)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = run.End(context.Background(), "bench", "user", "") }()
	go func() { _, _ = io.Copy(io.Discard, run.Output(requester)) }()
	portal, err := cl.Portal()
	if err != nil {
		b.Fatal(err)
	}
	url := portal.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("web-1").SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: "breakglass-s1", Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec).
		URL().String()
	kinds := []string{"client-go", "lean"}

	// Echo: one attach of each, the same pty, taking turns.
	echoers := make([]*echoer, len(kinds))
	for i, k := range kinds {
		in, out, err := attachKinds[k](ctx, portal.Config, url)
		if err != nil {
			b.Fatal(err)
		}
		echoers[i] = newEchoer(in, out, byte('a'+i))
	}
	time.Sleep(300 * time.Millisecond) // both join the terminal
	spent := make([]time.Duration, len(kinds))
	for n := 0; b.Loop(); n++ {
		for j := range kinds {
			i := (n + j) % len(kinds)
			spent[i] += echoers[i].roundTrip(b)
		}
	}

	// Memory: each kind's idle attaches in a child process, both children
	// held open to the end (a detach may end the shell on the virtual node).
	perIdle := make([]float64, len(kinds))
	for i, k := range kinds {
		order, err := json.Marshal(attachOrder{Kind: k, N: idle, URL: url, Host: portal.Config.Host,
			TLS: portal.Config.TLSClientConfig, As: portal.Config.Impersonate})
		if err != nil {
			b.Fatal(err)
		}
		file := fmt.Sprintf("%s/attach-%s.json", b.TempDir(), k)
		if err := os.WriteFile(file, order, 0o600); err != nil {
			b.Fatal(err)
		}
		child := exec.CommandContext(ctx, os.Args[0])
		child.Env = append(os.Environ(), attachChildEnv+"="+file)
		child.Stderr = os.Stderr
		hold, err := child.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		report, err := child.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := child.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = hold.Close(); _ = child.Wait() }()
		line, err := bufio.NewReader(report).ReadString('\n')
		if err != nil {
			b.Fatalf("the %s child reported nothing: %v", k, err)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(line), 10, 64)
		if err != nil {
			b.Fatalf("the %s child reported %q", k, line)
		}
		perIdle[i] = float64(n)
	}
	for i, k := range kinds {
		b.ReportMetric(perIdle[i], "B/idle-attach-"+k)
		b.ReportMetric(float64(spent[i].Microseconds())/float64(b.N), "µs/key-"+k)
	}
	b.ReportMetric(perIdle[1]/perIdle[0], "ratio-memory-lean/client-go")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "ratio-echo-lean/client-go")
}
