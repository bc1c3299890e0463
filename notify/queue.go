package notify

import (
	"context"
	"math/rand/v2"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Retry is how a failed delivery is tried again: exponential backoff with
// jitter, Retry-After honoured.
type Retry struct {
	// Tries is how many times a message is tried in all (default 5).
	Tries int
	// Base is the first wait, doubled for each next one (default 8s:
	// waits of up to 8, 16, 32 and 64 s, about two minutes in all).
	Base time.Duration
	// Max bounds one wait, a server's Retry-After included (default 2m).
	Max time.Duration
}

func (r Retry) withDefaults() Retry {
	if r.Tries <= 0 {
		r.Tries = 5
	}
	if r.Base <= 0 {
		r.Base = 8 * time.Second
	}
	if r.Max <= 0 {
		r.Max = 2 * time.Minute
	}
	return r
}

// wait is how long to wait before try number try+1 (0-based) after err:
// half the backoff plus a random part of the other half, so that relays
// that failed together do not all come back at once.
func (r Retry) wait(try int, err error) time.Duration {
	if ra := retryAfter(err); ra > 0 {
		return min(ra, r.Max)
	}
	d := min(r.Base<<min(try, 20), r.Max)
	return d/2 + rand.N(d/2+1)
}

// destination is one place messages go: its queue, its rate limit and
// what the limit holds back for the next digest. One goroutine (run)
// delivers its messages in order; a slow destination holds up only itself.
type destination struct {
	key  string
	kind string
	sink Sink
	// limit is nil for generic webhooks: a program takes every event.
	limit *rate.Limiter
	in    chan Notice
	held  []Notice
}

func newDestination(key string, sink Sink, perMinute, queue int) *destination {
	q := &destination{key: key, kind: sink.Kind(), sink: sink, in: make(chan Notice, queue)}
	if q.kind != "webhook" {
		q.limit = rate.NewLimiter(rate.Limit(float64(perMinute)/60), perMinute)
	}
	return q
}

// run delivers until in is closed, then delivers what is left.
func (q *destination) run(d *Dispatcher) {
	defer d.wg.Done()
	var wake <-chan time.Time // set while the limit holds notices back
	for {
		select {
		case n, ok := <-q.in:
			if !ok {
				q.finish(d)
				return
			}
			q.held = append(q.held, n)
			if wake != nil {
				continue // folded into the digest that waits for the window
			}
		case <-wake: // the window opened: flush below
		}
		wake = q.flush(d)
	}
}

// flush sends what is held while the limit allows: one notice as itself,
// several as one digest. It returns when to try again, or nil.
func (q *destination) flush(d *Dispatcher) <-chan time.Time {
	for len(q.held) > 0 {
		now := d.clock.Now()
		if q.limit != nil && !q.limit.AllowN(now, 1) {
			return d.clock.After(q.untilToken(now))
		}
		m := Message{Notices: q.held}
		q.held = nil
		q.deliver(d, m)
	}
	return nil
}

// untilToken is how long until the limit allows one more message.
func (q *destination) untilToken(now time.Time) time.Duration {
	missing := 1 - q.limit.TokensAt(now)
	return max(time.Duration(missing/float64(q.limit.Limit())*float64(time.Second)), time.Millisecond)
}

// finish sends what is held at close as one message, whatever the limit:
// a relay shutting down does not wait a minute for a window.
func (q *destination) finish(d *Dispatcher) {
	if len(q.held) > 0 {
		q.deliver(d, Message{Notices: q.held})
		q.held = nil
	}
}

// deliver tries m until it is sent, refused for good, out of tries, or
// the dispatcher gives up at close; each outcome is counted.
func (q *destination) deliver(d *Dispatcher, m Message) {
	if m.Digest() {
		d.metrics.digested.WithLabelValues(q.kind).Add(float64(len(m.Notices)))
	}
	err := tryDelivery(d.ctx, d.clock, d.retry, func(ctx context.Context) error { return q.sink.Deliver(ctx, m) }, func(err error, wait time.Duration) {
		d.metrics.retries.WithLabelValues(q.kind).Inc()
		d.log.V(1).Info("notification failed, retrying", "sink", q.kind, "error", err.Error(), "in", wait.String())
	})
	switch {
	case err == nil:
		d.metrics.sent.WithLabelValues(q.kind).Inc()
	case d.ctx.Err() != nil:
		d.metrics.dropped.WithLabelValues(q.kind, "shutdown").Add(float64(len(m.Notices)))
		d.log.Error(err, "notification dropped at shutdown", "sink", q.kind, "notices", len(m.Notices))
	default:
		d.metrics.failed.WithLabelValues(q.kind).Inc()
		d.log.Error(err, "notification failed", "sink", q.kind, "notices", len(m.Notices), "kind", m.Notices[0].Kind,
			"session", m.Notices[0].Namespace+"/"+m.Notices[0].Session)
	}
}

// tryDelivery calls send until it succeeds, fails for good or runs out of
// tries, waiting on clk between tries; ctx ends the waiting.
func tryDelivery(ctx context.Context, clk clock.Clock, r Retry, send func(context.Context) error, retrying func(error, time.Duration)) error {
	var err error
	for try := 0; try < r.Tries; try++ {
		if err = send(ctx); err == nil || IsPermanent(err) || try == r.Tries-1 {
			return err
		}
		wait := r.wait(try, err)
		retrying(err, wait)
		t := clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C():
		}
	}
	return err
}
