package audit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowWriter stands in for a collector 1 ms away, counting its writes.
type slowWriter struct{ writes atomic.Int64 }

func (s *slowWriter) Write(context.Context, []byte) error {
	s.writes.Add(1)
	time.Sleep(time.Millisecond)
	return nil
}

// lockedLog is the baseline: what the log did before group commit, one
// sink write per event with the chain's lock held across it.
type lockedLog struct {
	mu   sync.Mutex
	sink Sink
	seq  uint64
}

func (l *lockedLog) Record(ctx context.Context, e Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	return l.sink.Write(ctx, []byte("{}\n"))
}

// BenchmarkAuditSlowSink: 32 callers auditing at once through a sink that
// takes 1 ms a write. ns/op is per event; writes/event says how many
// events share a write.
func BenchmarkAuditSlowSink(b *testing.B) {
	ctx := context.Background()
	b.Run("locked-baseline", func(b *testing.B) {
		sink := &slowWriter{}
		l := &lockedLog{sink: sink}
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := l.Record(ctx, Event{Kind: "attach"}); err != nil {
					b.Error(err)
				}
			}
		})
		b.ReportMetric(float64(sink.writes.Load())/float64(b.N), "writes/event")
	})
	b.Run("group-commit", func(b *testing.B) {
		sink := &slowWriter{}
		l := NewLog(Event{}, nil, sink)
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := l.Record(ctx, Event{Kind: "attach", Actor: "alice@example.com", Session: "shop/s1"}); err != nil {
					b.Error(err)
				}
			}
		})
		b.ReportMetric(float64(sink.writes.Load())/float64(b.N), "writes/event")
	})
}
