package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// newTestDispatcher is a Dispatcher over config on clk, closed when the
// test ends (a test may close it earlier).
func newTestDispatcher(t *testing.T, clk *clocktesting.FakeClock, config string, o Options) *Dispatcher {
	t.Helper()
	var c *Config
	if config != "" {
		var err error
		if c, err = parseConfig(t, config); err != nil {
			t.Fatal(err)
		}
	}
	o.Clock, o.PortalURL = clk, "https://tower.example"
	o.Retry = Retry{Base: time.Second}
	d, err := NewDispatcher(c, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(t, d) })
	return d
}

func closeWithin(t *testing.T, d *Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Error(err)
	}
}

func send(t *testing.T, d *Dispatcher, kind string, s *v1alpha1.Session) {
	t.Helper()
	if err := d.Send(context.Background(), Event{Kind: kind, Cluster: "flight-1", To: "approvers"}, s); err != nil {
		t.Fatal(err)
	}
}

func count(c *prometheus.CounterVec, labels ...string) int {
	return int(testutil.ToFloat64(c.WithLabelValues(labels...)))
}

func TestRetryAfterAServerErrorThenDelivered(t *testing.T) {
	clk := clocktesting.NewFakeClock(testAt)
	srv, got := recorder(t, func(n int, w http.ResponseWriter) {
		if n == 0 {
			http.Error(w, "down", http.StatusInternalServerError)
		}
	})
	d := newTestDispatcher(t, clk, `routes: [{to: [{sink: webhook, url: "`+srv.URL+`"}]}]`, Options{})
	send(t, d, "request.new", makeSession("s-1"))
	first := decode(t, receive(t, got).body)
	eventually(t, "the retry's timer", clk.HasWaiters)
	clk.Step(time.Second) // the first wait is at most Retry.Base
	second := decode(t, receive(t, got).body)
	if first["id"] != second["id"] || first["id"] == "" {
		t.Errorf("a retry is the same event: ids %v and %v", first["id"], second["id"])
	}
	closeWithin(t, d)
	if s, r, f := count(d.metrics.sent, "webhook"), count(d.metrics.retries, "webhook"), count(d.metrics.failed, "webhook"); s != 1 || r != 1 || f != 0 {
		t.Fatalf("sent %d, retries %d, failed %d; want 1, 1, 0", s, r, f)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(d)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	if want := "breakglass_notifications_digested_total breakglass_notifications_dropped_total breakglass_notifications_failed_total " +
		"breakglass_notifications_retries_total breakglass_notifications_sent_total"; strings.Join(names, " ") != want {
		t.Fatalf("metrics %v, want %s", names, want)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	clk := clocktesting.NewFakeClock(testAt)
	srv, got := recorder(t, func(n int, w http.ResponseWriter) {
		if n == 0 {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	})
	d := newTestDispatcher(t, clk, `routes: [{to: [{sink: webhook, url: "`+srv.URL+`"}]}]`, Options{})
	send(t, d, "request.new", makeSession("s-1"))
	receive(t, got)
	eventually(t, "the retry's timer", clk.HasWaiters)
	clk.Step(29 * time.Second)
	if !clk.HasWaiters() {
		t.Fatal("retried before the server's Retry-After")
	}
	clk.Step(time.Second)
	receive(t, got)
}

func TestAPermanentRefusalIsNotRetried(t *testing.T) {
	clk := clocktesting.NewFakeClock(testAt)
	srv, got := recorder(t, func(_ int, w http.ResponseWriter) { http.Error(w, "bad payload", http.StatusBadRequest) })
	d := newTestDispatcher(t, clk, `routes: [{to: [{sink: webhook, url: "`+srv.URL+`"}]}]`, Options{})
	send(t, d, "request.new", makeSession("s-1"))
	receive(t, got)
	closeWithin(t, d)
	if f, r := count(d.metrics.failed, "webhook"), count(d.metrics.retries, "webhook"); f != 1 || r != 0 {
		t.Fatalf("failed %d, retries %d; want 1, 0", f, r)
	}
}

func TestSendDoesNotWaitForAHungSink(t *testing.T) {
	clk := clocktesting.NewFakeClock(testAt)
	release := make(chan struct{})
	srv, got := recorder(t, func(int, http.ResponseWriter) { <-release })
	d := newTestDispatcher(t, clk, `routes: [{to: [{sink: webhook, url: "`+srv.URL+`"}]}]`, Options{QueueSize: 2})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10 {
			_ = d.Send(context.Background(), Event{Kind: "request.new", Cluster: "flight-1"}, makeSession(fmt.Sprintf("s-%d", i)))
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Send waited for a sink that hangs")
	}
	receive(t, got) // the one in flight, hanging
	// One in flight and two queued at most; at least two were taken.
	if n := count(d.metrics.dropped, "webhook", "queue_full"); n < 7 || n > 8 {
		t.Fatalf("dropped %d as the queue was full, want 7 or 8", n)
	}
	close(release)
	closeWithin(t, d)
	if s, dropped := count(d.metrics.sent, "webhook"), count(d.metrics.dropped, "webhook", "queue_full"); s+dropped != 10 {
		t.Fatalf("sent %d and dropped %d of 10: some went uncounted", s, dropped)
	}
}

func TestDigestAfterTheRateLimit(t *testing.T) {
	clk := clocktesting.NewFakeClock(testAt)
	srv, got := recorder(t, func(int, http.ResponseWriter) {})
	hook := writeFile(t, "slack", srv.URL+"/hook")
	d := newTestDispatcher(t, clk, `{ratePerMinute: 3, routes: [{approvers: shop-oncall, to: [{sink: slack, webhookURLFile: `+hook+`}]}]}`, Options{})
	var sessions []*v1alpha1.Session
	for i := range 7 {
		s := makeSession(fmt.Sprintf("s-%d", i), func(s *v1alpha1.Session) { s.Spec.Reason = fmt.Sprintf("reason %d", i) })
		sessions = append(sessions, s)
		send(t, d, "request.new", s)
	}
	for _, s := range sessions {
		s.Spec.Reason = "changed after Send" // what was queued is a copy
	}
	for range 3 {
		msg := decode(t, receive(t, got).body)
		checkBlockKit(t, msg)
	}
	q := d.dests[0]
	eventually(t, "the rest to be held for the next window", func() bool { return len(q.in) == 0 && clk.HasWaiters() })
	select {
	case r := <-got:
		t.Fatalf("a fourth message went before the window: %s", r.body)
	default:
	}
	clk.Step(time.Minute)
	r := receive(t, got)
	msg := decode(t, r.body)
	checkBlockKit(t, msg)
	blocks := msg["blocks"].([]any)
	header := blocks[0].(map[string]any)["text"].(map[string]any)["text"]
	if header != "4 more requests in shop on flight-1" || len(blocks) != 2+4 {
		t.Fatalf("digest %q with %d blocks", header, len(blocks))
	}
	for i := 3; i < 7; i++ {
		if !strings.Contains(string(r.body), fmt.Sprintf("reason %d", i)) || strings.Contains(string(r.body), "changed") {
			t.Fatalf("the digest does not list reason %d as it was sent: %s", i, r.body)
		}
	}
	closeWithin(t, d)
	if s, dg := count(d.metrics.sent, "slack"), count(d.metrics.digested, "slack"); s != 4 || dg != 4 {
		t.Fatalf("sent %d, digested %d; want 4 messages, 4 notices folded", s, dg)
	}
}

func TestCloseSendsWhatIsHeldAsOneDigest(t *testing.T) {
	clk := clocktesting.NewFakeClock(testAt)
	srv, got := recorder(t, func(int, http.ResponseWriter) { /* 200 */ })
	hook := writeFile(t, "teams", srv.URL+"/hook")
	d := newTestDispatcher(t, clk, `{ratePerMinute: 1, routes: [{to: [{sink: teams, webhookURLFile: `+hook+`}]}]}`, Options{})
	for i := range 3 {
		send(t, d, "request.new", makeSession(fmt.Sprintf("s-%d", i)))
	}
	receive(t, got)
	q := d.dests[0]
	eventually(t, "the rest to be held", func() bool { return len(q.in) == 0 && clk.HasWaiters() })
	closeWithin(t, d) // the clock never moves: Close does not wait for the window
	msg := decode(t, receive(t, got).body)
	checkAdaptiveCard(t, msg)
	if raw, _ := json.Marshal(msg); !strings.Contains(string(raw), "2 more requests in shop on flight-1") {
		t.Fatalf("not a digest of the two held: %s", raw)
	}
}

func TestCloseGivesUpAtItsDeadline(t *testing.T) {
	clk := clocktesting.NewFakeClock(testAt)
	release := make(chan struct{})
	defer close(release)
	srv, got := recorder(t, func(int, http.ResponseWriter) { <-release })
	d := newTestDispatcher(t, clk, `routes: [{to: [{sink: webhook, url: "`+srv.URL+`"}]}]`, Options{})
	send(t, d, "request.new", makeSession("s-1"))
	receive(t, got)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Close(ctx); err == nil {
		t.Fatal("Close said all was delivered")
	}
	if n := count(d.metrics.dropped, "webhook", "shutdown"); n != 1 {
		t.Fatalf("dropped at shutdown: %d, want 1", n)
	}
	if err := d.Send(context.Background(), Event{Kind: "request.new"}, makeSession("s-2")); err != nil || count(d.metrics.dropped, "webhook", "closed") != 1 {
		t.Fatalf("Send after Close: %v, dropped %d", err, count(d.metrics.dropped, "webhook", "closed"))
	}
}

func TestDispatcherReviewOverdue(t *testing.T) {
	clk := clocktesting.NewFakeClock(testAt)
	srv, got := recorder(t, func(int, http.ResponseWriter) {})
	o := Options{Cluster: "flight-1", FallbackReviewer: "security-oncall", Source: "breakglass/sweeper"}
	d := newTestDispatcher(t, clk, `routes: [{kinds: [review.overdue], to: [{sink: webhook, url: "`+srv.URL+`"}]}]`, o)
	if err := d.ReviewOverdue(context.Background(), makeSession("s-1")); err != nil {
		t.Fatal(err)
	}
	ev := decode(t, receive(t, got).body)
	data := ev["data"].(map[string]any)
	if data["to"] != "security-oncall" || data["link"] != "https://tower.example/sessions/flight-1/shop/s-1/review" || ev["source"] != "breakglass/sweeper/flight-1" {
		t.Fatalf("%v", ev)
	}
	if err := d.Send(context.Background(), Event{Kind: "request.new"}, makeSession("s-2")); err != nil || count(d.metrics.dropped, "none", "no_route") != 1 {
		t.Fatalf("an event no route takes: %v, counted %d", err, count(d.metrics.dropped, "none", "no_route"))
	}

	// Nothing takes it: the sweeper must try again, not record it told.
	none := newTestDispatcher(t, clk, `routes: [{kinds: [request.new], to: [{sink: webhook, url: "`+srv.URL+`"}]}]`, o)
	if err := none.ReviewOverdue(context.Background(), makeSession("s-1")); err == nil {
		t.Fatal("an overdue review that went nowhere was reported told")
	}
}

func TestNotifyURLKeepsPostingPlainJSON(t *testing.T) {
	clk := clocktesting.NewFakeClock(testAt)
	srv, got := recorder(t, func(int, http.ResponseWriter) {})
	d := newTestDispatcher(t, clk, "", Options{NotifyURL: srv.URL})
	send(t, d, "request.new", makeSession("s 1"))
	r := receive(t, got)
	var e Event
	if err := json.Unmarshal(r.body, &e); err != nil || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%v, %s", err, r.header.Get("Content-Type"))
	}
	want := Event{Kind: "request.new", Cluster: "flight-1", Namespace: "shop", Session: "s 1", Requester: "alice@example.com",
		Reason: "checkout returns 500s", Link: "https://tower.example/sessions/flight-1/shop/s%201/approve", At: testAt, To: "approvers"}
	if e != want {
		t.Fatalf("got  %+v\nwant %+v", e, want)
	}
}
