package live

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/debugsession"
)

// Adopt takes up, until ctx ends, the Active sessions no relay runs any
// more: those released by a replica shutting down, those of a replica
// gone (its presence Lease lapsed: presence.go), looked for as soon as
// either is seen, and, every interval, those whose heartbeat is older than
// three of the relay's heartbeat intervals (a single relay after a
// restart; a replica whose Lease could not be written). Each goes on in a
// new debug container under its grant, hard stop and recording
// (debugsession.Runner.Resume); the person's terminal reconnects to it. Of
// several relays, the API server lets one take each session. Sessions past
// their hard stop or grant are the sweeper's.
func (s *Sessions) Adopt(ctx context.Context, every time.Duration) {
	stale := debugsession.StaleAfter(s.limits.Heartbeat)
	kick := make(chan struct{}, 1)
	s.present(func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	for {
		s.adoptOnce(ctx, stale)
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-time.After(every):
		}
	}
}

// present starts this replica's presence in each cluster (one of several
// replicas only), once; Close ends it once every session here is handed
// over.
func (s *Sessions) present(changed func()) {
	if s.peers == nil {
		return
	}
	s.presenceOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for name, t := range s.clusters {
			// A client of its own, so that its renewals never queue behind
			// a takeover's requests: a replica that cannot renew lets go.
			kube := t.Kube
			if t.Config != nil {
				cfg := rest.CopyConfig(t.Config)
				cfg.RateLimiter, cfg.QPS, cfg.Burst = nil, 5, 10
				if k, err := kubernetes.NewForConfig(cfg); err == nil {
					kube = k
				}
			}
			p := newPresence(kube, s.peers.Self, s.log.WithValues("cluster", name), changed,
				func(why string) { s.letGoAll(name, why) })
			s.mu.Lock()
			t.presence = p
			s.mu.Unlock()
			wg.Go(func() { p.run(ctx) })
		}
		s.mu.Lock()
		s.stopPresence = func() { cancel(); wg.Wait() }
		s.mu.Unlock()
	})
}

// letGoAll lets go of every session this replica runs in cluster, writing
// nothing: it may no longer be the one running them.
func (s *Sessions) letGoAll(cluster, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, l := range s.live {
		switch {
		case key.cluster != cluster:
		case l.live != nil:
			s.log.Info("letting go of a session", "session", key.String(), "why", why)
			go l.live.Lose()
		default:
			// Starting or being taken up: it is let go of once it settles.
			l.lost = true
		}
	}
}

// adoptWorkers is how many sessions one look takes up at once: a replica
// taking over from another takes over all its sessions (docs/scaling.md).
const adoptWorkers = 32

func (s *Sessions) adoptOnce(ctx context.Context, stale time.Duration) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, adoptWorkers)
	for name, t := range s.clusters {
		s.mu.Lock()
		presence := t.presence
		s.mu.Unlock()
		if presence != nil && !presence.present() {
			// Not present (cut off, or just let go): the others may be
			// taking its sessions up; it takes nothing up until its
			// Lease is written again.
			continue
		}
		var list v1alpha1.SessionList
		if err := t.Client.List(ctx, &list); err != nil {
			s.log.Error(err, "listing sessions to adopt", "cluster", name)
			continue
		}
		// Each Lease is looked at once a look, after the list: a replica
		// back since is seen back.
		there := map[string]bool{}
		leaseThere := func(replica string) bool {
			if _, seen := there[replica]; !seen {
				there[replica] = leaseThere(ctx, t.Kube, replica)
			}
			return there[replica]
		}
		for i := range list.Items {
			sess := &list.Items[i]
			if sess.Status.Phase != v1alpha1.PhaseActive {
				continue
			}
			key := keyOf(name, sess)
			gone := presence != nil && holderGone(sess.Status.Relay, s.peers.Self, presence.present(), presence.isGone, leaseThere)
			s.mu.Lock()
			_, runs := s.live[key]
			waiting := s.clock.Now().Before(s.adoptAfter[key])
			var claim *liveSession
			if !runs && !waiting {
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
				s.adopt(ctx, name, t, key, claim, sess, stale, gone)
			}()
		}
	}
	wg.Wait()
}

// holderGone says whether the replica a session names (holder) is gone,
// so that self takes the session up without waiting for its heartbeat to
// go stale: it is self's own name (a process before this one of the same
// name, or this one after letting go) while self is present again; or
// another replica self counts gone whose Lease is still not there when
// looked at after the sessions were listed. A replica that let go and
// came back writes its Lease before it takes its sessions up again, so
// two replicas never both take one up as gone
// (relays_model_test.go).
func holderGone(holder, self string, selfPresent bool, countedGone, leaseThere func(string) bool) bool {
	switch holder {
	case "":
		return false
	case self:
		return selfPresent
	default:
		return countedGone(holder) && !leaseThere(holder)
	}
}

// adopt resumes one session this relay has marked as its own to try.
func (s *Sessions) adopt(ctx context.Context, name string, t *Cluster, key sessionKey, claim *liveSession, sess *v1alpha1.Session, stale time.Duration, gone bool) {
	// Once claimed, a resume runs to its end even if the relay is told to
	// stop meanwhile: Close then hands it over, rather than leaving it
	// claimed by nobody until its heartbeat goes stale.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	live, err := Resume(rctx, t.Runner, sess, stale, gone)
	if err != nil {
		s.settle(key, claim, nil)
		s.mu.Lock()
		if !errors.Is(err, debugsession.ErrNotResumable) {
			// Every try is audited (and refused ones undone): a cluster
			// refusing them (an API server that just restarted) is tried
			// less and less often.
			wait := min(2*s.adoptWait[key]+time.Second, 8*time.Second)
			s.adoptWait[key], s.adoptAfter[key] = wait, s.clock.Now().Add(wait)
		}
		s.mu.Unlock()
		if !errors.Is(err, debugsession.ErrNotResumable) {
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
	s.enforce(key, live)
	s.api.Notify(ctx, name, v1alpha1.NotifySessionResumed, live.Session.DeepCopy())
}
