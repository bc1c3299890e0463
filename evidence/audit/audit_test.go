package audit

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func writeLog(t *testing.T, n int) []string {
	t.Helper()
	var buf bytes.Buffer
	clock := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	l := NewLog(Event{}, func() time.Time { clock = clock.Add(time.Second); return clock }, &Writer{W: &buf})
	for i := 0; i < n; i++ {
		if _, err := l.Record(context.Background(), Event{Kind: "attach", Actor: "alice", Session: "shop/s1",
			Details: map[string]string{"container": "breakglass-s1", "i": strings.Repeat("x", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	return strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

func TestVerifyIntactChain(t *testing.T) {
	lines := writeLog(t, 5)
	n, err := Verify(strings.NewReader(strings.Join(lines, "")))
	if err != nil || n != 5 {
		t.Fatalf("Verify = %d, %v", n, err)
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	lines := writeLog(t, 5)
	for _, tc := range []struct {
		name string
		log  string
		want string
	}{
		{"a removed line", lines[0] + lines[1] + lines[3] + lines[4], "line 3: seq 4 follows seq 2: 1 event(s) missing"},
		{"an edited actor", lines[0] + strings.Replace(lines[1], `"actor":"alice"`, `"actor":"mallory"`, 1) + lines[2], "line 2 (seq 2): the event does not match its hash: it was edited"},
		{"swapped lines", lines[0] + lines[2] + lines[1], "line 2: seq 3 follows seq 1"},
		{"garbage", lines[0] + "{not json\n", "line 2: not an audit event"},
		{"an unknown field", lines[0] + `{"seq":2,"extra":1}` + "\n", "line 2: not an audit event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(strings.NewReader(tc.log))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestVerifyDetectsARechainedForgery(t *testing.T) {
	// Editing an event and recomputing its own hash still breaks the link from the next one.
	lines := writeLog(t, 3)
	forged := NewLog(Event{}, func() time.Time { return time.Date(2026, 11, 30, 10, 0, 2, 0, time.UTC) })
	var buf bytes.Buffer
	forged.sinks = []Sink{&Writer{W: &buf}}
	first, err := Last(strings.NewReader(lines[0]))
	if err != nil {
		t.Fatal(err)
	}
	forged.seq, forged.prev = first.Seq, first.Hash
	if _, err := forged.Record(context.Background(), Event{Kind: "attach", Actor: "mallory"}); err != nil {
		t.Fatal(err)
	}
	_, err = Verify(strings.NewReader(lines[0] + buf.String() + lines[2]))
	if err == nil || !strings.Contains(err.Error(), "line 3 (seq 3): names a previous event that is not the one before it") {
		t.Fatalf("Verify = %v", err)
	}
}

func TestFileContinuesTheChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	for run := 0; run < 2; run++ {
		f, last, err := OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		l := NewLog(last, nil, f)
		for i := 0; i < 3; i++ {
			if _, err := l.Record(context.Background(), Event{Kind: "grant", Actor: "system:serviceaccount:breakglass-system:tower-breakglass"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := Verify(bytes.NewReader(data)); err != nil || n != 6 {
		t.Fatalf("after a restart: Verify = %d, %v", n, err)
	}
}

func TestHTTPSinkRetries(t *testing.T) {
	var calls atomic.Int32
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		got.Store(b.String())
	}))
	defer srv.Close()
	sink := &HTTP{URL: srv.URL, Retries: 3, Backoff: time.Millisecond}
	if err := sink.Write(context.Background(), []byte("{\"seq\":1}\n")); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 || got.Load() != "{\"seq\":1}\n" {
		t.Fatalf("calls %d, body %v", calls.Load(), got.Load())
	}
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer refusing.Close()
	if err := (&HTTP{URL: refusing.URL, Retries: 3, Backoff: time.Millisecond}).Write(context.Background(), []byte("x\n")); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("a refusal: %v", err)
	}
}

func TestASinkFailureIsAnError(t *testing.T) {
	before := testutil.ToFloat64(SinkFailures.WithLabelValues("http"))
	l := NewLog(Event{}, nil, &HTTP{URL: "http://127.0.0.1:1/", Retries: 0})
	if _, err := l.Record(context.Background(), Event{Kind: "grant"}); err == nil {
		t.Fatal("an event that reached no sink passed silently")
	}
	// And the operator's alert sees it.
	if got := testutil.ToFloat64(SinkFailures.WithLabelValues("http")) - before; got != 1 {
		t.Fatalf("http sink failures went up by %v, want 1", got)
	}
}

// slowSink holds each write until released, counting writes and lines.
type slowSink struct {
	release chan struct{}
	mu      sync.Mutex
	writes  int
	buf     bytes.Buffer
	fail    bool
}

func (s *slowSink) Write(_ context.Context, lines []byte) error {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("the collector is down")
	}
	s.writes++
	s.buf.Write(lines)
	return nil
}

// TestSlowSinkGroupCommits: events recorded while a write is in flight are
// not held behind it one by one: they go out together in the next write,
// in the chain's order.
func TestSlowSinkGroupCommits(t *testing.T) {
	sink := &slowSink{release: make(chan struct{})}
	l := NewLog(Event{}, nil, sink)
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Record(context.Background(), Event{Kind: "attach", Actor: "alice"})
			errs <- err
		}()
	}
	// Let the first write through once all 20 are queued or in flight.
	time.Sleep(100 * time.Millisecond)
	close(sink.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, err := Verify(bytes.NewReader(sink.buf.Bytes())); err != nil || got != n {
		t.Fatalf("Verify = %d, %v", got, err)
	}
	if sink.writes > 3 {
		t.Fatalf("%d writes for %d events: the events did not go out together", sink.writes, n)
	}
}

// TestFailedWriteDoesNotAdvanceTheChain: events no sink took are refused
// and not chained: the next event follows the last one written.
func TestFailedWriteDoesNotAdvanceTheChain(t *testing.T) {
	sink := &slowSink{release: make(chan struct{}), fail: true}
	close(sink.release)
	l := NewLog(Event{}, nil, sink)
	if _, err := l.Record(context.Background(), Event{Kind: "approve"}); err == nil {
		t.Fatal("an event no sink took was not an error")
	}
	sink.fail = false
	e, err := l.Record(context.Background(), Event{Kind: "approve"})
	if err != nil || e.Seq != 1 || e.Prev != "" {
		t.Fatalf("after the sink came back: seq %d prev %q, %v", e.Seq, e.Prev, err)
	}
}

// TestVerifyRefusesARewrittenLine: a line that parses to the same event
// but reads otherwise (a repeated key in another case, which JSON lets win)
// is refused: every tool must read the log the relay wrote.
func TestVerifyRefusesARewrittenLine(t *testing.T) {
	var buf bytes.Buffer
	l := NewLog(Event{}, nil, &Writer{W: &buf})
	if _, err := l.Record(context.Background(), Event{Kind: "approve", Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(buf.String(), "{", `{"actor":"mallory",`, 1)
	forged = strings.Replace(forged, `"actor":"alice"`, `"ACTOR":"alice"`, 1)
	if _, err := Verify(strings.NewReader(forged)); err == nil || !strings.Contains(err.Error(), "not the event as the relay writes it") {
		t.Fatalf("a line that reads as mallory's and hashes as alice's: %v", err)
	}
}
