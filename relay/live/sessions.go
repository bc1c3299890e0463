// Package live runs the sessions of this replica: each one's stream,
// its viewers and moderation, its limits and extensions, and its start,
// terminal and end. As its replication layer it keeps this replica's
// presence, takes up the sessions a gone replica ran, and passes a request
// for a session another replica runs on to it. Who may do what is asked of
// relay/api's decisions; the debug runner starts and stops containers.
package live

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/wire"
)

// Cluster is one cluster as this replica runs sessions there.
type Cluster struct {
	*api.Cluster
	// Config is the portal identity's REST config: presence builds a
	// client of its own from it.
	Config *rest.Config
	Runner *debugsession.Runner
	// presence is this replica's presence in the cluster, while Adopt runs
	// among several replicas.
	presence *presence
}

// Options are what Sessions run with.
type Options struct {
	API      *api.Sessions
	Clusters []*Cluster
	// Limits are the idle, disconnect and heartbeat limits.
	Limits debugsession.Limits
	// Origin says whether a browser page of origin may open a terminal.
	Origin func(origin string) bool
	Clock  clock.Clock
	Log    logr.Logger
	// Peers, when set, makes this relay one of several replicas: it names
	// itself in the sessions it runs, passes requests for another's
	// terminals to it, and hands its sessions over when it closes.
	Peers *Peers
}

// Sessions are the sessions this replica runs, is starting or is taking up.
type Sessions struct {
	api      *api.Sessions
	clusters map[string]*Cluster
	limits   debugsession.Limits
	origin   func(string) bool
	clock    clock.Clock
	log      logr.Logger
	peers    *Peers
	metrics  metrics

	mu   sync.Mutex
	live map[sessionKey]*liveSession
	// adoptWait and adoptAfter back off resuming a session the cluster
	// refused to let this relay resume.
	adoptWait  map[sessionKey]time.Duration
	adoptAfter map[sessionKey]time.Time
	// stopPresence ends this replica's presence Leases (Adopt starts them,
	// once).
	presenceOnce sync.Once
	stopPresence func()
	// enforcers run each live session's limits; Close waits for them.
	enforcers sync.WaitGroup
}

// New is the sessions of a replica that runs none yet.
func New(o Options) *Sessions {
	s := &Sessions{api: o.API, clusters: map[string]*Cluster{}, limits: o.Limits, origin: o.Origin, clock: o.Clock, log: o.Log,
		peers: o.Peers, metrics: newMetrics(), live: map[sessionKey]*liveSession{},
		adoptWait: map[sessionKey]time.Duration{}, adoptAfter: map[sessionKey]time.Time{}}
	for _, c := range o.Clusters {
		s.clusters[c.Name] = c
	}
	return s
}

type sessionKey struct{ cluster, namespace, name string }

func (k sessionKey) String() string { return k.cluster + "/" + k.namespace + "/" + k.name }

func keyOf(cluster string, sess *v1alpha1.Session) sessionKey {
	return sessionKey{cluster, sess.Namespace, sess.Name}
}

// Watching says whether name watches sess's terminal here; true where this
// replica does not run it, for the one that does judges again
// (api.Running).
func (s *Sessions) Watching(cluster string, sess *v1alpha1.Session, name string) bool {
	run := s.runs(keyOf(cluster, sess))
	return run == nil || run.live.watching(name)
}

// Live is Active sess's countdowns and people, counted where it runs: a
// request for one another replica runs is passed on to it (api.Running).
func (s *Sessions) Live(w http.ResponseWriter, r *http.Request, cluster string, sess *v1alpha1.Session) (*wire.LiveView, bool) {
	run := s.runs(keyOf(cluster, sess))
	if run == nil {
		return nil, s.passOn(w, r, sess)
	}
	return s.liveView(s.clusters[cluster], sess.Namespace, run), false
}

// liveView is the countdowns and people of run, a session in namespace ns
// of t.
func (s *Sessions) liveView(t *Cluster, ns string, run *liveSession) *wire.LiveView {
	lastInput, viewers, alone := run.live.Activity()
	v := &wire.LiveView{Viewers: viewers, Attached: run.live.out.people(), IdleEndsAt: metav1.NewTime(lastInput.Add(s.limits.Idle))}
	if t != nil && t.Moderates(ns) {
		v.Moderated, v.InputHeld = true, run.live.out.moderators() == 0
	}
	if viewers == 0 {
		at := metav1.NewTime(alone.Add(s.limits.Disconnect))
		v.AloneEndsAt = &at
	}
	return v
}

// sessionFor is api.Sessions.SessionFor, with the cluster as this replica
// runs sessions there.
func (s *Sessions) sessionFor(r *http.Request, c api.Caller, a api.Action) (*Cluster, *v1alpha1.Session, error) {
	cl, sess, err := s.api.SessionFor(r, c, a)
	if err != nil {
		return nil, nil, err
	}
	return s.clusters[cl.Name], sess, nil
}

// Close ends every session this replica runs, as a relay running alone
// must when it shuts down: detached, recorded, grant revoked. One of
// several replicas hands them over instead (Session.Release): another takes
// each up within an adoption interval, and its terminals reconnect there.
func (s *Sessions) Close(ctx context.Context) {
	s.mu.Lock()
	var lives []*Session
	for _, l := range s.live {
		if l.live != nil {
			lives = append(lives, l.live)
		}
	}
	s.mu.Unlock()
	// Several at a time: a relay has its termination grace period for all
	// of them.
	var wg sync.WaitGroup
	slots := make(chan struct{}, adoptWorkers)
	for _, l := range lives {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if s.peers != nil {
				if err := l.Release(ctx); err != nil {
					s.log.Error(err, "handing a session over at shutdown", "session", l.Session.Namespace+"/"+l.Session.Name)
				}
				return
			}
			if err := l.Stop(ctx, v1alpha1.EndDisconnect, "the relay shut down"); err != nil {
				s.log.Error(err, "ending a session at shutdown", "session", l.Session.Namespace+"/"+l.Session.Name)
			}
		}()
	}
	wg.Wait()
	s.enforcers.Wait()
	// Gone once all is handed over: the others then take it up at once.
	s.mu.Lock()
	stop := s.stopPresence
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

type metrics struct {
	live  prometheus.Gauge
	bytes *prometheus.CounterVec
	// terminals are the terminal connections open, by role.
	terminals *prometheus.GaugeVec
}

func newMetrics() metrics {
	return metrics{
		live: prometheus.NewGauge(prometheus.GaugeOpts{Name: "breakglass_relay_live_sessions",
			Help: "Sessions with a terminal open in this relay."}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "breakglass_relay_terminal_bytes_total",
			Help: "Terminal bytes relayed, by direction."}, []string{"direction"}),
		terminals: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "breakglass_relay_terminal_connections",
			Help: "Terminal connections open, by role: requester (typing) or watcher (read-only)."}, []string{"role"}),
	}
}

// Collectors are the metrics of the sessions run here.
func (s *Sessions) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.metrics.live, s.metrics.bytes, s.metrics.terminals}
}
