package notify

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Options are what a Dispatcher needs beside its Config.
type Options struct {
	// PortalURL is the base of every link (see Links).
	PortalURL string
	// Cluster names the cluster of events that name none (the sweeper's).
	Cluster string
	// FallbackReviewer is who ReviewOverdue says must act.
	FallbackReviewer string
	// Source names the sender in CloudEvents: "breakglass/relay" or
	// "breakglass/sweeper".
	Source string
	// NotifyURL, when set, gets every event as plain JSON, as the relay's
	// notifyURL always did, beside the routes (http or https).
	NotifyURL string
	// QueueSize bounds the notices waiting per destination (default 256);
	// beyond it they are dropped and counted.
	QueueSize int
	Retry     Retry
	Clock     clock.Clock
	Log       logr.Logger
}

// Dispatcher routes events to destinations and delivers them in the
// background. Send never blocks and never fails the caller: a session is
// not held up by a chat server.
type Dispatcher struct {
	links            Links
	cluster          string
	fallbackReviewer string
	routes           []compiledRoute
	dests            []*destination
	clock            clock.Clock
	retry            Retry
	log              logr.Logger
	metrics          *metrics

	// ctx is every delivery's; Close cancels it when its deadline passes.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards closed against Send writing to a closed queue.
	mu     sync.RWMutex
	closed bool
}

// NewDispatcher builds the routes' sinks (c may be nil: NotifyURL alone)
// and starts one delivery goroutine per destination; Close stops them.
func NewDispatcher(c *Config, o Options) (*Dispatcher, error) {
	if c == nil {
		c = &Config{RatePerMinute: DefaultRatePerMinute}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 256
	}
	routes := c.Routes
	if o.NotifyURL != "" {
		// notifyURL has always taken http too: kept so, not to break a
		// working install; new webhook destinations must be https.
		if u, err := url.Parse(o.NotifyURL); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return nil, fmt.Errorf("notifyURL: %q is not an http(s) URL", o.NotifyURL)
		}
		routes = append(routes[:len(routes):len(routes)], Route{To: []Destination{{Sink: "webhook", URL: o.NotifyURL, Format: FormatJSON}}})
	}
	if len(routes) == 0 {
		return nil, errors.New("notifications: no routes and no notifyURL: nothing to send to")
	}
	d := &Dispatcher{links: Links{PortalURL: o.PortalURL}, cluster: o.Cluster, fallbackReviewer: o.FallbackReviewer,
		clock: o.Clock, retry: o.Retry.withDefaults(), log: o.Log, metrics: newMetrics()}
	byKey := map[string]*destination{}
	for i, r := range routes {
		cr := compiledRoute{Route: r}
		for j, dest := range r.To {
			q, ok := byKey[dest.key()]
			if !ok {
				sink, err := c.sink(dest, o.Source)
				if err != nil {
					return nil, fmt.Errorf("notifications.routes[%d].to[%d]: %w", i, j, err)
				}
				perMinute := dest.RatePerMinute
				if perMinute == 0 {
					perMinute = c.RatePerMinute
				}
				q = newDestination(dest.key(), sink, max(perMinute, 1), o.QueueSize)
				byKey[q.key] = q
				d.dests = append(d.dests, q)
				d.metrics.init(q.kind)
			}
			cr.dests = append(cr.dests, q)
		}
		d.routes = append(d.routes, cr)
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	for _, q := range d.dests {
		d.wg.Add(1)
		go q.run(d)
	}
	return d, nil
}

// Send queues e about s for every destination whose route matches, and
// returns at once. It reads s only before it returns (into a Notice of
// plain values), so the caller may go on changing it. It never fails:
// what cannot be queued is counted dropped.
func (d *Dispatcher) Send(_ context.Context, e Event, s *v1alpha1.Session) error {
	d.enqueue(e, s)
	return nil
}

// ReviewOverdue tells the fallback reviewer that s waits for its review.
// Unlike Send it fails when the notice went nowhere (no route, queues
// full, closed): the sweeper then tries again instead of recording the
// reviewer as told.
func (d *Dispatcher) ReviewOverdue(_ context.Context, s *v1alpha1.Session) error {
	if d.enqueue(Event{Kind: v1alpha1.NotifyReviewOverdue, To: To(v1alpha1.NotifyReviewOverdue, s, d.fallbackReviewer)}, s) == 0 {
		return fmt.Errorf("notifications: the overdue review of %s/%s could not be queued for any destination", s.Namespace, s.Name)
	}
	return nil
}

// enqueue returns how many destinations took the notice.
func (d *Dispatcher) enqueue(e Event, s *v1alpha1.Session) int {
	if e.Cluster == "" {
		e.Cluster = d.cluster
	}
	n := newNotice(e, s, d.links, d.clock.Now())
	targets := routeTo(d.routes, n.Kind, n.Cluster, n.Namespace)
	if len(targets) == 0 {
		d.metrics.dropped.WithLabelValues("none", "no_route").Inc()
		return 0
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	queued := 0
	for _, t := range targets {
		n.Approvers = t.approvers
		if d.closed {
			d.metrics.dropped.WithLabelValues(t.dest.kind, "closed").Inc()
			continue
		}
		select {
		case t.dest.in <- n:
			queued++
		default:
			d.metrics.dropped.WithLabelValues(t.dest.kind, "queue_full").Inc()
			d.log.Error(nil, "notification queue full: dropped", "sink", t.dest.kind, "kind", n.Kind, "session", n.Namespace+"/"+n.Session)
		}
	}
	return queued
}

// Close stops taking events and delivers what is queued, held by a rate
// limit (as one digest per destination) or being retried, until ctx ends;
// then it gives up on the rest, counting it dropped (reason shutdown).
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		for _, q := range d.dests {
			close(q.in)
		}
	}
	d.mu.Unlock()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		d.cancel()
		return nil
	case <-ctx.Done():
		d.cancel()
		<-done
		return fmt.Errorf("notifications: closing: %w: what was left is counted dropped", ctx.Err())
	}
}

// Describe and Collect make the Dispatcher a prometheus.Collector: the
// relay and the sweeper register it beside their own metrics.
func (d *Dispatcher) Describe(ch chan<- *prometheus.Desc) {
	d.metrics.each(func(c prometheus.Collector) { c.Describe(ch) })
}

// Collect reports the counters.
func (d *Dispatcher) Collect(ch chan<- prometheus.Metric) {
	d.metrics.each(func(c prometheus.Collector) { c.Collect(ch) })
}

type metrics struct {
	sent, failed, retries, digested, dropped *prometheus.CounterVec
}

func newMetrics() *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "breakglass_notifications_" + name + "_total", Help: help}, labels)
	}
	return &metrics{
		sent:     counter("sent", "Messages delivered, by sink (a digest counts once).", "sink"),
		failed:   counter("failed", "Messages given up on after their last try or a permanent refusal, by sink.", "sink"),
		retries:  counter("retries", "Deliveries tried again after a failure, by sink.", "sink"),
		digested: counter("digested", "Notices a rate limit folded into a digest, by sink.", "sink"),
		dropped: counter("dropped", "Notices never sent: queue_full, closed, shutdown (Close's deadline passed), no_route (sink none).",
			"sink", "reason"),
	}
}

// init makes a sink's series exist at zero, for alerts on their rate.
func (m *metrics) init(sink string) {
	for _, c := range []*prometheus.CounterVec{m.sent, m.failed, m.retries, m.digested} {
		c.WithLabelValues(sink)
	}
	m.dropped.WithLabelValues(sink, "queue_full")
}

func (m *metrics) each(f func(prometheus.Collector)) {
	for _, c := range []*prometheus.CounterVec{m.sent, m.failed, m.retries, m.digested, m.dropped} {
		f(c)
	}
}
