package relay_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/test/harness/measure"
)

// BenchmarkRelayLoad runs LOAD_SESSIONS (200) attached sessions through a
// relay in a process of its own (cmd/breakglass, as deployed; not sharing
// this process's heap with the virtual node), on the real API server, and
// reports: the relay's memory per attached idle session (Go heap in use
// and resident set, after minus before, over the sessions), the API
// server requests it makes per session per minute while they idle, the
// keystroke echo through it against a direct attach to the same kind of
// shell in the same run (p50, p99 and their ratios), output throughput
// per session and in total with every byte counted at the terminal, and
// the time a second replica takes to take up all the sessions when the
// first shuts down, and, with the first back, how long each session takes
// to be taken up by it when the second is killed (p50, p99, and until all
// run again). make bench-load runs it once (-benchtime 1x);
// docs/benchmarks.md has the figures.
func BenchmarkRelayLoad(b *testing.B) {
	n := 200
	if v, err := strconv.Atoi(os.Getenv("LOAD_SESSIONS")); err == nil && v > 0 {
		n = v
	}
	bin := buildRelay(b)
	// The relays collect garbage often, so that the heap measured is close
	// to what the sessions hold.
	b.Setenv("GOGC", "25")
	dir := b.TempDir()
	ns := cl.Namespace(b, "load")
	// Two replicas named by their ports (see replicaPair), one store.
	cfgA, cfgB := config(), config()
	fileA, listenA := relayProcessConfig(b, dir, cfgA)
	fileB, listenB := relayProcessConfig(b, dir, cfgB)
	portOf := func(listen string) string { return listen[len("127.0.0.1:"):] }
	replica := func(listen string) []string {
		args := []string{"--replica=" + portOf(listen), "--peer-url=http://127.0.0.1:{replica}"}
		// LOAD_KUBE_QPS sets the relays' --kube-api-qps (its default
		// otherwise), to see what a takeover's rate of requests costs.
		if qps := os.Getenv("LOAD_KUBE_QPS"); qps != "" {
			args = append(args, "--kube-api-qps="+qps)
		}
		// LOAD_KUBE_BURST sets their --kube-api-burst likewise.
		if burst := os.Getenv("LOAD_KUBE_BURST"); burst != "" {
			args = append(args, "--kube-api-burst="+burst)
		}
		return args
	}
	a := startRelayProcess(b, bin, fileA, replica(listenA)...)
	second := startRelayProcess(b, bin, fileB, replica(listenB)...)
	tr := &testRelay{url: "http://" + listenA}
	before := scrape(b, a.metrics)

	// n pods, n sessions started and attached, eight at a time.
	terms := make([]*loadTerm, n)
	names := make([]string, n)
	began := time.Now()
	parallel(n, 8, func(i int) {
		pod := fmt.Sprintf("web-%d", i)
		cl.RunningPod(b, ns, pod)
		s := tr.request(b, alice, ns, pod, "").Name
		tr.must(b, http.StatusOK, token(b, bob), "POST", sessionPath(ns, s)+"/approve", `{}`)
		tr.must(b, http.StatusOK, token(b, alice), "POST", sessionPath(ns, s)+"/start", "")
		names[i], terms[i] = s, dialLoad(b, tr.url, ns, s)
	})
	if b.Failed() {
		b.FailNow() // a session not started: nothing below would mean anything
	}
	b.Logf("%d sessions started and attached in %s", n, time.Since(began).Round(time.Second))
	figures := map[string]float64{"sessions": float64(n)}
	// LOAD_ONLY=takeover measures only the hand-over and the takeover
	// (a few minutes less, to work on them).
	if os.Getenv("LOAD_ONLY") != "takeover" {
		maps.Copy(figures, steadyFigures(b, ns, a, before, terms, names))
	}

	// The first replica shuts down (a rolling update): the second takes up
	// every session it hands over.
	handover := time.Now()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	figures["takeover-s"] = takenUp(b, ns, n, portOf(listenB), handover, second, false).max.Seconds()
	if err := a.wait(); err != nil {
		b.Fatalf("the first replica's shutdown: %v\n%s", err, a.logs.String())
	}

	// The first replica is back (a new pod of the same name) and the second
	// is killed: nothing handed over, its presence Lease no longer renewed.
	// Each session's time from the kill to its claim by the first, and to
	// running there again (the first's live sessions).
	a = startRelayProcess(b, bin, fileA, replica(listenA)...)
	requestsBefore := scrape(b, a.metrics)["rest_client_requests_total"]
	killed := time.Now()
	second.kill()
	took := takenUp(b, ns, n, portOf(listenA), killed, a, true)
	// What taking each one up cost the API server (the presence Lease's
	// renewals and the first heartbeats of the time it took included).
	figures["kill-takeover-api-req/session"] = (scrape(b, a.metrics)["rest_client_requests_total"] - requestsBefore) / float64(n)
	figures["kill-takeover-p50-s"] = took.p50.Seconds()
	figures["kill-takeover-p99-s"] = took.p99.Seconds()
	figures["kill-takeover-running-p50-s"] = took.runningP50.Seconds()
	figures["kill-takeover-running-p99-s"] = took.runningP99.Seconds()
	figures["kill-takeover-all-running-s"] = took.allRunning.Seconds()
	for name, v := range figures {
		b.ReportMetric(v, name)
	}
}

// steadyFigures are the load benchmark's figures of n attached sessions
// on replica a, measured from before they started: memory, the API
// server's requests while they idle, keystroke echo and output.
func steadyFigures(b *testing.B, ns string, a *relayProcess, before map[string]float64, terms []*loadTerm, names []string) map[string]float64 {
	time.Sleep(5 * time.Second)
	idle := scrape(b, a.metrics)
	// Reported at the end: b.ReportMetric's figures do not survive the
	// timer's reset.
	n := len(terms)
	figures := map[string]float64{
		"heap-KiB/session":   (idle["go_memstats_heap_inuse_bytes"] - before["go_memstats_heap_inuse_bytes"]) / float64(n) / 1024,
		"rss-KiB/session":    (idle["process_resident_memory_bytes"] - before["process_resident_memory_bytes"]) / float64(n) / 1024,
		"goroutines/session": (idle["go_goroutines"] - before["go_goroutines"]) / float64(n),
		"stack-KiB/session":  (idle["go_memstats_stack_inuse_bytes"] - before["go_memstats_stack_inuse_bytes"]) / float64(n) / 1024}

	// What the idle sessions cost the API server (heartbeats, adoption's
	// list), over a minute.
	const window = time.Minute
	time.Sleep(window)
	after := scrape(b, a.metrics)
	figures["api-req/session/min"] = (after["rest_client_requests_total"] - idle["rest_client_requests_total"]) / float64(n) / window.Minutes()

	// Keystroke echo: through the relay (session 0, the others attached and
	// idle) and directly through the API server to a shell on the same node.
	const samples = 400
	direct := directAttach(b, ns, "web-0", v1alpha1.DebugContainerName(names[0], 0))
	viaRelay, viaAPI := echoTimes(b, samples, terms[0], direct)
	for _, q := range []struct {
		name string
		p    float64
	}{{"p50", 0.50}, {"p99", 0.99}} {
		r, d := measure.Quantile(viaRelay, q.p), measure.Quantile(viaAPI, q.p)
		figures["echo-"+q.name+"-relay-ms"] = measure.Ms(r)
		figures["echo-"+q.name+"-direct-ms"] = measure.Ms(d)
		figures["echo-"+q.name+"-ratio"] = float64(r) / float64(d)
	}

	// Output: 20 sessions print 2 MB each at once (q's, written by tr as
	// octal 161, so the command's echo holds none); every byte is counted
	// at its terminal.
	const each = 2_000_000
	writers := min(20, n)
	b.ResetTimer()
	start := time.Now()
	perSession := make([]time.Duration, writers)
	parallel(writers, writers, func(i int) {
		t0 := time.Now()
		terms[i].counting.Store(true)
		terms[i].send(fmt.Appendf(nil, "head -c %d /dev/zero | tr '\\0' '\\161'; echo; echo done-$((%d+1))\n", each, i))
		terms[i].waitFor(b, fmt.Sprintf("done-%d", i+1), 2*time.Minute)
		perSession[i] = time.Since(t0)
	})
	total := time.Since(start)
	b.StopTimer()
	for i := range writers {
		if got := terms[i].xs.Load(); got != each {
			b.Fatalf("session %d: %d bytes of output reached its terminal, want %d", i, got, each)
		}
	}
	figures["MB/s-total"] = float64(writers*each) / total.Seconds() / 1e6
	figures["MB/s-per-session"] = float64(each) / median(perSession).Seconds() / 1e6

	return figures
}

// takeovers are how long the sessions took to be claimed by a replica,
// and (when asked) to run there again.
type takeovers struct{ p50, p99, max, runningP50, runningP99, allRunning time.Duration }

// takenUp waits until replica (the process proc) has claimed all n Active
// sessions of ns, and, with untilRunning, until it runs them all again
// (its live sessions), and says when each was claimed and when each count
// of them ran, counted from since.
func takenUp(b *testing.B, ns string, n int, replica string, since time.Time, proc *relayProcess, untilRunning bool) takeovers {
	seen := map[string]time.Duration{}
	// running[k] is when k+1 sessions ran at the replica.
	var running []time.Duration
	for len(seen) < n || untilRunning && len(running) < n {
		var list v1alpha1.SessionList
		if err := cl.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		now := time.Since(since)
		for _, s := range list.Items {
			if _, ok := seen[s.Name]; !ok && s.Status.Phase == v1alpha1.PhaseActive && s.Status.Relay == replica {
				seen[s.Name] = now
			}
		}
		if untilRunning {
			for live := int(scrape(b, proc.metrics)["breakglass_relay_live_sessions"]); len(running) < min(live, n); {
				running = append(running, now)
			}
		}
		if now > 5*time.Minute {
			b.Fatalf("after 5 minutes, %d of %d sessions taken up by replica %s, %d running there\n%s", len(seen), n, replica, len(running), proc.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var all []time.Duration
	for _, d := range seen {
		all = append(all, d)
	}
	t := takeovers{p50: measure.Quantile(all, 0.5), p99: measure.Quantile(all, 0.99), max: slices.Max(all)}
	if untilRunning {
		t.runningP50, t.runningP99, t.allRunning = measure.Quantile(running, 0.5), measure.Quantile(running, 0.99), running[n-1]
	}
	return t
}

// loadTerm is a terminal of the load benchmark: what it shows arrives on
// chunks (for the echo) or is counted (the x's of the output test).
type loadTerm struct {
	// write sends what the person types.
	write    func([]byte) error
	mu       sync.Mutex
	tail     []byte
	chunks   chan []byte
	counting atomic.Bool
	xs       atomic.Int64
}

func dialLoad(b testing.TB, base, ns, name string) *loadTerm {
	d := websocket.Dialer{Subprotocols: []string{wire.TerminalProtocol, wire.BearerProtocolPrefix + token(b, alice)}}
	conn, resp, err := d.Dial("ws"+base[len("http"):]+sessionPath(ns, name)+"/terminal", nil)
	if resp != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		b.Fatalf("attaching to %s: %v", name, err)
	}
	lt := &loadTerm{chunks: make(chan []byte, 64),
		write: func(p []byte) error { return conn.WriteMessage(websocket.BinaryMessage, p) }}
	go func() {
		for {
			kind, p, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if kind != websocket.BinaryMessage {
				continue
			}
			lt.seen(p)
		}
	}()
	b.Cleanup(func() { _ = conn.Close() })
	return lt
}

func (lt *loadTerm) seen(p []byte) {
	if lt.counting.Load() {
		lt.xs.Add(int64(bytes.Count(p, []byte("q")))) // what the output test prints, and its command does not hold
	}
	lt.mu.Lock()
	lt.tail = append(lt.tail, p...)
	if len(lt.tail) > 4096 {
		lt.tail = lt.tail[len(lt.tail)-4096:]
	}
	lt.mu.Unlock()
	select {
	case lt.chunks <- p:
	default:
	}
}

// send types p; a connection that fails ends the benchmark through its
// checks (a panic here would skip TestMain's clean-up and leak the cluster).
func (lt *loadTerm) send(p []byte) {
	if err := lt.write(p); err != nil {
		lt.mu.Lock()
		lt.tail = append(lt.tail, fmt.Sprintf("\n[sending failed: %v]\n", err)...)
		lt.mu.Unlock()
	}
}

func (lt *loadTerm) waitFor(b testing.TB, want string, within time.Duration) {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		lt.mu.Lock()
		found := bytes.Contains(lt.tail, []byte(want))
		lt.mu.Unlock()
		if found {
			return
		}
	}
	b.Errorf("no %q within %s", want, within)
}

// directAttach attaches to a session's debug container as the portal
// (which the session's grant allows), straight through the API server: the
// baseline the relay's echo is measured against, on the same shell.
func directAttach(b testing.TB, ns, pod, container string) *loadTerm {
	portal, err := cl.Portal()
	if err != nil {
		b.Fatal(err)
	}
	req := portal.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewWebSocketExecutor(portal.Config, "GET", req.URL().String())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	lt := &loadTerm{chunks: make(chan []byte, 64), write: func(p []byte) error { _, err := inW.Write(p); return err }}
	go func() {
		_ = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: inR, Stdout: writerTo(lt.seen), Tty: true})
	}()
	b.Cleanup(func() { cancel(); _ = inW.Close() })
	time.Sleep(300 * time.Millisecond) // the attach joins the terminal
	return lt
}

type writerTo func([]byte)

func (w writerTo) Write(p []byte) (int, error) { w(slices.Clone(p)); return len(p), nil }

// echoTimes sends one keystroke at a time and times its echo, taking
// turns between the two terminals of one shell (each sees the other's
// echo too, which is drained before its own turn).
func echoTimes(b testing.TB, samples int, x, y *loadTerm) (tx, ty []time.Duration) {
	drain := func(lt *loadTerm) {
		for {
			select {
			case <-lt.chunks:
			case <-time.After(30 * time.Millisecond):
				return
			}
		}
	}
	one := func(lt, other *loadTerm, key byte) time.Duration {
		drain(lt)
		t0 := time.Now()
		lt.send([]byte{key})
		select {
		case <-lt.chunks:
		case <-time.After(10 * time.Second):
			b.Fatalf("keystroke %q was not echoed", key)
		}
		took := time.Since(t0)
		drain(other)
		return took
	}
	for i := range samples {
		key := byte('a' + i%26)
		tx = append(tx, one(x, y, key))
		ty = append(ty, one(y, x, key))
		if i%64 == 63 {
			x.send([]byte("\x15")) // ^U: the line never grows past the tty's limit
		}
	}
	x.send([]byte("\x15")) // and the shell's next line is the next command
	drain(x)
	drain(y)
	return tx, ty
}

func median(d []time.Duration) time.Duration { return measure.Quantile(d, 0.5) }

// parallel runs f(0..n-1), at most width at a time.
func parallel(n, width int, f func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, width)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(i)
		}()
	}
	wg.Wait()
}

// scrape reads a Prometheus text endpoint: each metric's series summed.
func scrape(b testing.TB, url string) map[string]float64 {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			switch {
			case m.Counter != nil:
				out[name] += m.Counter.GetValue()
			case m.Gauge != nil:
				out[name] += m.Gauge.GetValue()
			}
		}
	}
	return out
}
