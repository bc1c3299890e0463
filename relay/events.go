package relay

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/tower-dev/breakglass/relay/api"
)

const (
	// eventStreamFor bounds one event stream (and the token's lifetime
	// does too): the browser reconnects on its own (EventSource), and each
	// connection checks the caller's token and permissions again.
	eventStreamFor = 5 * time.Minute
	// keepAliveEvery is how often an idle stream says it is there, so
	// that proxies between the browser and the relay keep it open.
	keepAliveEvery = 20 * time.Second
	// eventWriteWithin bounds each write: a client that stops reading
	// does not hold its handler (or the relay's shutdown).
	eventWriteWithin = 30 * time.Second
	// Streams per person and per replica: each is cheap (the watch is
	// shared), but not free.
	streamsPerCaller = 8
	streamsPerRelay  = 512
)

// events streams SessionEvents as Server-Sent Events while the caller's
// page is open: queues and lists stay current without polling every
// Session. Every stream on this replica shares one watch per cluster
// (sessionFeed); the page reads the list when its stream opens.
func (s *Server) events(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	rc := http.NewResponseController(w)
	if !s.sessions.Permissions.SeesAny(c) {
		return api.Forbidden("%s may see no sessions anywhere: there is nothing to stream", c.Name)
	}
	if err := s.streams.take(c.ID); err != nil {
		return err
	}
	defer s.streams.give(c.ID)
	sub := newStreamSub()
	for name, feed := range s.feeds {
		stop := feed.subscribe(sub, func(ns string) bool { return s.sessions.Permissions.Sees(c, name, ns) })
		defer stop()
	}
	until := time.Now().Add(eventStreamFor)
	if !c.Expires.IsZero() && c.Expires.Before(until) {
		until = c.Expires
	}
	ends := time.NewTimer(time.Until(until))
	defer ends.Stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	// no-transform: a proxy (Backstage's compression, say) must pass each
	// event on as it comes, not hold them back to compress them.
	h.Set("Cache-Control", "no-store, no-transform")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	keepAlive := time.NewTicker(keepAliveEvery)
	defer keepAlive.Stop()
	write := func(format string, a ...any) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteWithin))
		if _, err := fmt.Fprintf(w, format, a...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write("retry: 2000\n\n") {
		return nil
	}
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-ends.C:
			return nil
		case <-s.closing:
			return nil
		case <-sub.behind:
			return nil // too far behind: the browser reconnects and reads again
		case e := <-sub.events:
			b, _ := json.Marshal(e)
			if !write("event: session\ndata: %s\n\n", b) {
				return nil
			}
		case <-keepAlive.C:
			if !write(": still here\n\n") {
				return nil
			}
		}
	}
}

// streamCount bounds the event streams open on this replica.
type streamCount struct {
	mu     sync.Mutex
	total  int
	caller map[string]int
}

func newStreamCount() *streamCount { return &streamCount{caller: map[string]int{}} }

func (n *streamCount) take(id string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.caller[id] >= streamsPerCaller:
		return &api.Error{Status: http.StatusTooManyRequests, Reason: "TooManyStreams", Message: fmt.Sprintf("at most %d event streams at a time for one person: close a page", streamsPerCaller)}
	case n.total >= streamsPerRelay:
		return &api.Error{Status: http.StatusServiceUnavailable, Reason: "TooManyStreams", Message: "this relay streams to as many pages as it may: try again shortly"}
	}
	n.caller[id]++
	n.total++
	return nil
}

func (n *streamCount) give(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.caller[id]--; n.caller[id] <= 0 {
		delete(n.caller, id)
	}
	n.total--
}
