package debugsession_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/relay/live"
	"github.com/tower-dev/breakglass/test/harness/measure"
)

// echoer sends one key and waits for the terminal to echo it back. Both
// terminals share one pty and see each other's echoes, so each side types
// its own key and a reader keeps its output drained.
type echoer struct {
	in  io.Writer
	key byte
	ch  chan byte
}

func newEchoer(in io.Writer, out io.Reader, key byte) *echoer {
	e := &echoer{in: in, key: key, ch: make(chan byte, 1<<16)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := out.Read(buf)
			for _, c := range buf[:n] {
				select {
				case e.ch <- c:
				default: // never block the terminal
				}
			}
			if err != nil {
				close(e.ch)
				return
			}
		}
	}()
	return e
}

func (e *echoer) roundTrip(b *testing.B) time.Duration {
	start := time.Now()
	if _, err := e.in.Write([]byte{e.key}); err != nil {
		b.Fatal(err)
	}
	for c := range e.ch {
		if c == e.key {
			return time.Since(start)
		}
	}
	b.Fatal("the terminal closed")
	return 0
}

// BenchmarkKeystrokeEcho: a key's round trip through the relay (recorded,
// both directions) against attaching to the same container directly, taking
// turns, on the virtual node behind the real API server.
func BenchmarkKeystrokeEcho(b *testing.B) {
	ns := cl.Namespace(b, fmt.Sprintf("echo-bench-%d", time.Now().UnixNano()%1000000))
	s := approvedSession(b, ns, false)
	r := runner(b, &recording.Dir{Root: b.TempDir()}, nil)
	ctx := context.Background()
	run, err := live.Start(ctx, r, s)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = run.End(ctx, "bench", "user", "") }()
	relayed := newEchoer(run, run.Output(requester), 'r')

	portal, err := cl.Portal()
	if err != nil {
		b.Fatal(err)
	}
	req := portal.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("web-1").SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: "breakglass-s1", Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewWebSocketExecutor(portal.Config, "GET", req.URL().String())
	if err != nil {
		b.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = exec.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Tty: true})
	}()
	direct := newEchoer(inW, outR, 'd')
	time.Sleep(300 * time.Millisecond) // the direct attach joins the terminal

	var tRelay, tDirect time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			tRelay += relayed.roundTrip(b)
			tDirect += direct.roundTrip(b)
		} else {
			tDirect += direct.roundTrip(b)
			tRelay += relayed.roundTrip(b)
		}
	}
	b.ReportMetric(float64(tRelay.Microseconds())/float64(b.N), "µs/key-relay")
	b.ReportMetric(float64(tDirect.Microseconds())/float64(b.N), "µs/key-direct")
	b.ReportMetric(float64(tRelay)/float64(tDirect), "ratio")
}

// BenchmarkIdleSessionAttached: what an idle session with one viewer costs,
// measured on real sessions attached through the API server. The virtual
// node runs in this process too, so its share (a pty, the streaming
// server's buffers) is counted: an upper bound on the relay's own cost.
func BenchmarkIdleSessionAttached(b *testing.B) {
	const n = 20
	for i := 0; b.Loop(); i++ {
		r := runner(b, &recording.Dir{Root: b.TempDir()}, nil)
		ctx := context.Background()
		sessions := make([]*v1alpha1.Session, n)
		for k := range sessions {
			ns := cl.Namespace(b, fmt.Sprintf("idle-bench-%d-%d-%d", i, k, time.Now().UnixNano()%1000000))
			sessions[k] = approvedSession(b, ns, true)
		}
		before := measure.HeapInUse()
		lives := make([]*live.Session, n)
		for k, s := range sessions {
			run, err := live.Start(ctx, r, s)
			if err != nil {
				b.Fatal(err)
			}
			v := run.Output(requester)
			go func() { _, _ = io.Copy(io.Discard, v) }()
			lives[k] = run
		}
		time.Sleep(200 * time.Millisecond) // the streams settle
		b.ReportMetric(float64(measure.HeapInUse()-before)/n, "B/idle-session")
		for _, l := range lives {
			_ = l.End(ctx, "bench", v1alpha1.EndUser, "")
		}
	}
}
