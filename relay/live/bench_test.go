package live

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/test/harness/measure"
)

// memStore is a write-once store in memory, so the benchmarks measure the
// relay and not a disk.
type memStore struct {
	mu      sync.Mutex
	objects map[string][]byte
}

func newMemStore() *memStore { return &memStore{objects: map[string][]byte{}} }

func (m *memStore) Put(_ context.Context, key string, data []byte, _ time.Time) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects[key]; ok {
		return "", recording.ErrExists
	}
	m.objects[key] = append([]byte(nil), data...)
	return "", nil
}

func (m *memStore) Current(context.Context, string) (string, error) { return "", nil }

func (m *memStore) Get(_ context.Context, key, _ string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[key]
	if !ok {
		return nil, recording.ErrNotFound
	}
	return b, nil
}

func (m *memStore) List(_ context.Context, prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []string
	for k := range m.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

func (m *memStore) Check(context.Context) error { return nil }

// pipeline is a session's relay path without the API server: what the
// attach stream would write goes through recording and fan-out to a viewer.
type pipeline struct {
	live   *Session
	stdout io.Writer
	viewer io.ReadCloser
}

func newPipeline(tb testing.TB, store recording.Store, name string, record bool) *pipeline {
	tb.Helper()
	r := &debugsession.Runner{Clock: clock.RealClock{}}
	s := &v1alpha1.Session{}
	s.Namespace, s.Name, s.UID = "bench", name, "bench-uid"
	rec, err := recording.New(context.Background(), store, recording.RefOf("bench", s), recording.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	l := newSession(r, s)
	st, _, stdout := debugsession.NewStream(rec, l.out.write)
	l.stream, l.rec = st, rec
	if !record {
		stdout = showOnly{l.out}
	}
	return &pipeline{live: l, stdout: stdout, viewer: l.Output(watcher)}
}

// showOnly is the output's path without its recording: the baseline.
type showOnly struct{ out *fanout }

func (w showOnly) Write(p []byte) (int, error) { w.out.write(p); return len(p), nil }

// terminalText is what a busy terminal shows: log lines, some UTF-8.
func terminalText(n int) []byte {
	line := "2026-11-30T07:52:01Z INFO checkout: order 4711 paid 12,50 € in 38 ms — ok\r\n"
	return []byte(strings.Repeat(line, n/len(line)+1)[:n])
}

// BenchmarkOutputThroughput: one session's output through the relay, with
// recording on and (the baseline) off, to a viewer that keeps up: the
// writer waits for the viewer every 256 chunks, as a real terminal stream
// is paced by the container. The figure to read is MB/s; the target is
// 200 MB/s with recording on.
func BenchmarkOutputThroughput(b *testing.B) {
	chunk := terminalText(32 << 10)
	for _, record := range []bool{false, true} {
		b.Run(map[bool]string{false: "baseline", true: "recorded"}[record], func(b *testing.B) {
			p := newPipeline(b, newMemStore(), "t", record)
			var got atomic.Int64
			done := make(chan struct{})
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := p.viewer.Read(buf)
					got.Add(int64(n))
					if err != nil {
						close(done)
						return
					}
				}
			}()
			b.SetBytes(int64(len(chunk)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				if _, err := p.stdout.Write(chunk); err != nil {
					b.Fatal(err)
				}
				if i%256 == 0 {
					for got.Load() < int64(i*len(chunk)) {
						runtime.Gosched()
					}
				}
			}
			p.live.out.close()
			<-done
			if n := got.Load(); n != int64(b.N*len(chunk)) {
				b.Fatalf("the viewer got %d bytes of %d", n, b.N*len(chunk))
			}
		})
	}
}

// BenchmarkIdleSessionMemory: what an idle session with one viewer costs
// the relay (B/session; the target is 256 KiB), and how much more the same
// session holds after 1 MiB and after 32 MiB of output (flat: the recording
// goes to the store in segments, never piles up in memory).
func BenchmarkIdleSessionMemory(b *testing.B) {
	const n = 1000
	for i := 0; i < b.N; i++ {
		store := newMemStore()
		before := measure.HeapInUse()
		ps := make([]*pipeline, n)
		for j := range ps {
			ps[j] = newPipeline(b, store, fmt.Sprint("idle-", j), true)
			v := ps[j].viewer
			go func() { _, _ = io.Copy(io.Discard, v) }()
		}
		perSession := float64(measure.HeapInUse()-before) / n
		busy := ps[0]
		chunk := terminalText(32 << 10)
		write := func(total int) {
			for k := 0; k < total/len(chunk); k++ {
				if _, err := busy.stdout.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
		}
		write(1 << 20)
		// The store keeps every byte; the relay must not. Count the relay.
		storeBytes := func() uint64 {
			store.mu.Lock()
			defer store.mu.Unlock()
			var t uint64
			for _, o := range store.objects {
				t += uint64(cap(o))
			}
			return t
		}
		after1 := measure.HeapInUse() - storeBytes()
		write(31 << 20)
		after32 := measure.HeapInUse() - storeBytes()
		b.ReportMetric(perSession, "B/idle-session")
		b.ReportMetric(float64(after32)/float64(after1), "heap-32MiB/1MiB")
		for _, p := range ps {
			p.live.out.close()
		}
	}
}

// BenchmarkManySessions: 10,000 idle sessions and 1,000 streaming at once in
// one process; each streaming session's viewer and recording must hold
// exactly the bytes sent (compared by SHA-256).
func BenchmarkManySessions(b *testing.B) {
	const idle, streaming, perSession = 10000, 1000, 64 << 10
	store := newMemStore()
	before := measure.HeapInUse()
	var all []*pipeline
	for j := 0; j < idle; j++ {
		p := newPipeline(b, store, fmt.Sprint("idle-", j), true)
		go func() { _, _ = io.Copy(io.Discard, p.viewer) }()
		all = append(all, p)
	}
	idleCost := float64(measure.HeapInUse()-before) / idle
	chunk := terminalText(4 << 10)
	b.SetBytes(streaming * perSession)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		errs := make(chan error, streaming)
		for j := 0; j < streaming; j++ {
			p := newPipeline(b, store, fmt.Sprintf("stream-%d-%d", i, j), true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				sent, got := sha256.New(), sha256.New()
				done := make(chan struct{})
				go func() { _, _ = io.Copy(got, p.viewer); close(done) }()
				for k := 0; k < perSession/len(chunk); k++ {
					sent.Write(chunk)
					if _, err := p.stdout.Write(chunk); err != nil {
						errs <- err
						return
					}
				}
				p.live.out.close()
				<-done
				if done, err := p.live.rec.Close(context.Background()); err != nil || done.Body == nil {
					errs <- fmt.Errorf("finalizing: %w", err)
					return
				}
				if !bytes.Equal(sent.Sum(nil), got.Sum(nil)) {
					errs <- fmt.Errorf("%s: the viewer's bytes differ from what was sent", p.live.Session.Name)
					return
				}
				raw, err := store.Get(context.Background(), recording.RefOf("bench", p.live.Session).Prefix()+recording.TranscriptFile, "")
				if err != nil {
					errs <- err
					return
				}
				recs, err := recording.ReadTranscript(raw)
				if err != nil {
					errs <- err
					return
				}
				recorded := sha256.New()
				for _, r := range recs {
					if r.Kind == recording.KindOutput {
						recorded.Write(r.Data)
					}
				}
				if !bytes.Equal(sent.Sum(nil), recorded.Sum(nil)) {
					errs <- fmt.Errorf("%s: the recording differs from what was sent", p.live.Session.Name)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(idleCost, "B/idle-session")
	for _, p := range all {
		p.live.out.close()
	}
}
