package relay

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/notify"
	"github.com/tower-dev/breakglass/relay/session"
)

// Adopt takes up, every interval until ctx ends, the Active sessions no
// relay runs any more: those whose heartbeat is older than three of the
// relay's heartbeat intervals (a relay killed or drained; this one after a
// restart). Each goes on in a new debug container under its grant, hard
// stop and recording (session.Runner.Resume); the person's terminal
// reconnects to it. Of several relays, the API server lets one take each
// session. Sessions past their hard stop or grant are the sweeper's.
func (s *Server) Adopt(ctx context.Context, every time.Duration) {
	stale := 3 * s.cfg.Limits.Heartbeat.Duration
	for {
		s.adoptOnce(ctx, stale)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// adoptWorkers is how many sessions one look takes up at once: a replica
// taking over from another takes over all its sessions (docs/scaling.md).
const adoptWorkers = 8

func (s *Server) adoptOnce(ctx context.Context, stale time.Duration) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, adoptWorkers)
	for name, t := range s.clusters {
		var list v1alpha1.SessionList
		if err := t.Client.List(ctx, &list); err != nil {
			s.log.Error(err, "listing sessions to adopt", "cluster", name)
			continue
		}
		for i := range list.Items {
			sess := &list.Items[i]
			if sess.Status.Phase != v1alpha1.PhaseActive {
				continue
			}
			key := sessionKey{name, sess.Namespace, sess.Name}
			s.mu.Lock()
			_, held := s.live[key]
			waiting := s.clock.Now().Before(s.adoptAfter[key])
			var claim *liveSession
			if !held && !waiting {
				claim = newLiveSession()
				s.live[key] = claim
			}
			s.mu.Unlock()
			if claim == nil {
				continue
			}
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				s.adopt(ctx, name, t, key, claim, sess, stale)
			}()
		}
	}
	wg.Wait()
}

// adopt resumes one session this relay has marked as its own to try.
func (s *Server) adopt(ctx context.Context, name string, t *target, key sessionKey, claim *liveSession, sess *v1alpha1.Session, stale time.Duration) {
	// Once claimed, a resume runs to its end even if the relay is told to
	// stop meanwhile: Close then hands it over, rather than leaving it
	// claimed by nobody until its heartbeat goes stale.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	live, err := t.runner.Resume(rctx, sess, stale)
	if err != nil {
		s.settle(key, claim, nil)
		s.mu.Lock()
		if !errors.Is(err, session.ErrNotResumable) {
			// Every try is audited (and refused ones undone): a cluster
			// refusing them (an API server that just restarted) is tried
			// less and less often.
			wait := min(2*s.adoptWait[key]+time.Second, 8*time.Second)
			s.adoptWait[key], s.adoptAfter[key] = wait, s.clock.Now().Add(wait)
		}
		s.mu.Unlock()
		if !errors.Is(err, session.ErrNotResumable) {
			s.log.Error(err, "resuming a session", "session", key.String())
		}
		return
	}
	s.mu.Lock()
	delete(s.adoptWait, key)
	delete(s.adoptAfter, key)
	s.mu.Unlock()
	s.settle(key, claim, live)
	s.metrics.live.Inc()
	s.log.Info("resumed a session its relay left", "session", key.String(), "resumes", live.Session.Status.Resumes)
	s.watch(key, live)
	s.notify(ctx, notify.Event{Kind: "session.resumed", Cluster: name, To: "requester"}, live.Session.DeepCopy())
}
