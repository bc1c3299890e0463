package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/time/rate"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/checkpoint"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/console"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/live"
	"github.com/tower-dev/breakglass/relay/wire"
)

// Portal is how the relay reaches one cluster: as the portal's
// ServiceAccount, the only identity the debug grants name.
type Portal struct {
	Client client.Client
	Kube   kubernetes.Interface
	Config *rest.Config
}

// Options are what a Server is built from.
type Options struct {
	Config  *Config
	Portals map[string]Portal
	Store   recording.Store
	Audit   *audit.Log
	// Notifier may be nil: no notifications.
	Notifier api.Notifier
	// Anchorer may be nil: recordings are not anchored.
	Anchorer *tlog.Anchorer
	// Checkpoints, when set, anchors the audit chain's head every
	// CheckpointEvery and once more when the server closes.
	Checkpoints     *checkpoint.Keeper
	CheckpointEvery time.Duration
	Clock           clock.Clock
	Log             logr.Logger
	// Peers, when set, makes this relay one of several replicas: it names
	// itself in the sessions it runs, passes requests for another's
	// terminals to it, and hands its sessions over when it closes.
	Peers *live.Peers
}

// Server is the relay's HTTP API.
type Server struct {
	cfg      *Config
	auth     *Authenticator
	store    recording.Store
	audit    *audit.Log
	anchorer *tlog.Anchorer
	clock    clock.Clock
	log      logr.Logger
	metrics  *metrics
	console  *console.Console
	// sessions is the decisions API: request, read, approve, deny, review.
	sessions *api.Sessions
	// live is the sessions this replica runs: start, terminal, end,
	// extensions, and the take-up of another replica's.
	live *live.Sessions

	// unauthenticated bounds how many refusals of requests without a valid
	// token are audited one by one; unaudited counts the rest, reported
	// with the next one audited. Anyone can send such requests: they must
	// not be able to flood the audit log.
	unauthenticated *rate.Limiter
	unaudited       atomic.Int64

	// stopCheckpoints ends the checkpointer; checkpointed is closed once its
	// last checkpoint is written.
	stopCheckpoints context.CancelFunc
	checkpointed    chan struct{}

	// closing is closed when the relay closes: event streams end, so that
	// the HTTP server's shutdown does not wait on them.
	closing   chan struct{}
	closeOnce sync.Once
	// feeds are the clusters' Session watches the event streams share;
	// streams counts those streams.
	feeds   map[string]*sessionFeed
	streams *streamCount
}

// newServer builds the API over the configured clusters. web, when set,
// serves the web console and lets its session cookie stand for a bearer
// token, from the console's origin only.
func newServer(o Options, auth *Authenticator, web *console.Console) (*Server, error) {
	if o.Store == nil || o.Audit == nil {
		return nil, errors.New("relay: a recording store and an audit log are required")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	replica := ""
	if o.Peers != nil {
		if err := o.Peers.Check(); err != nil {
			return nil, fmt.Errorf("relay: replicas: %w", err)
		}
		replica = o.Peers.Self
		if o.Peers.Transport == nil {
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.Proxy = nil
			o.Peers.Transport = t
		}
	}
	s := &Server{cfg: o.Config, auth: auth, store: o.Store, audit: o.Audit, console: web, anchorer: o.Anchorer, clock: o.Clock,
		log: o.Log, metrics: newMetrics(), closing: make(chan struct{}), feeds: map[string]*sessionFeed{}, streams: newStreamCount(),
		unauthenticated: rate.NewLimiter(rate.Limit(UnauthenticatedAuditRate), UnauthenticatedAuditBurst)}
	s.sessions = &api.Sessions{Clusters: map[string]*api.Cluster{}, Permissions: o.Config.Permissions,
		ReviewWithin: o.Config.Limits.ReviewWithin.Duration, Clock: o.Clock, Notifier: o.Notifier, Log: o.Log}
	var running []*live.Cluster
	for _, c := range o.Config.Clusters {
		t, err := s.addCluster(o, c, replica)
		if err != nil {
			return nil, err
		}
		running = append(running, t)
	}
	l := o.Config.Limits
	s.live = live.New(live.Options{API: s.sessions, Clusters: running, Clock: o.Clock, Log: o.Log, Peers: o.Peers,
		Limits: debugsession.Limits{Idle: l.Idle.Duration, Disconnect: l.Disconnect.Duration, Heartbeat: l.Heartbeat.Duration},
		Origin: func(origin string) bool {
			return slices.Contains(o.Config.AllowedOrigins, origin) || (web != nil && origin == web.Origin())
		}})
	s.sessions.Running = s.live
	s.metrics.registry.MustRegister(s.live.Collectors()...)
	if o.Checkpoints != nil {
		s.keepCheckpoints(o.Checkpoints, o.CheckpointEvery)
	}
	return s, nil
}

// addCluster wires cluster c into the decisions API and the event feed,
// and gives back the cluster as this replica runs sessions there: with its
// debug runner, acting as the portal.
func (s *Server) addCluster(o Options, c Cluster, replica string) (*live.Cluster, error) {
	t, ok := o.Portals[c.Name]
	if !ok {
		return nil, fmt.Errorf("relay: no credentials for cluster %s", c.Name)
	}
	cl := &api.Cluster{Name: c.Name, Client: t.Client, Kube: t.Kube, NeedsApproval: c.NeedsApproval(), Moderates: c.Moderates,
		Lifecycle: lifecycle.AsPortal(c.Name, t.Client, t.Kube, o.Audit, o.Clock)}
	s.sessions.Clusters[c.Name] = cl
	s.feeds[c.Name] = newSessionFeed(c.Name, t)
	return &live.Cluster{Cluster: cl, Config: t.Config, Runner: &debugsession.Runner{
		Cluster: c.Name, Client: t.Client, Kube: t.Kube, Config: t.Config, Store: o.Store, Audit: o.Audit, Clock: o.Clock,
		DebugImage: c.DebugImage, Grace: o.Config.Limits.Grace.Duration, Retention: o.Config.Recording.Retention.Duration,
		MaxTTL: api.MaxDuration, Anchorer: o.Anchorer, Log: o.Log, Replica: replica,
		Extensions: o.Config.Limits.extensionLimits(),
	}}, nil
}

// keepCheckpoints anchors the audit chain's head every interval (10
// minutes unless set) until the server closes.
func (s *Server) keepCheckpoints(k *checkpoint.Keeper, every time.Duration) {
	if every <= 0 {
		every = 10 * time.Minute
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopCheckpoints, s.checkpointed = cancel, make(chan struct{})
	go func() {
		defer close(s.checkpointed)
		k.Run(ctx, every)
	}()
}

// signingKey publishes what verifies the relay's signatures (its public
// key, or its certificate), for reviewers to pin: nothing secret, so no
// token. A reviewer should still compare it with the one the operators
// publish out of band: a relay that is not the real one can serve any key.
func (s *Server) signingKey(w http.ResponseWriter, _ *http.Request) {
	if s.anchorer == nil {
		api.WriteError(w, &api.Error{Status: http.StatusNotFound, Reason: "NotAnchored", Message: "this relay signs nothing: no transparency log is configured"})
		return
	}
	pemBytes, err := s.anchorer.PublicKey()
	if err != nil {
		api.WriteError(w, api.Internal(err))
		return
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	_, _ = w.Write(pemBytes)
}

func (s *Server) loginConfig(w http.ResponseWriter, _ *http.Request) {
	api.WriteJSON(w, http.StatusOK, wire.LoginConfig{Issuer: s.cfg.OIDC.Issuer, ClientID: s.cfg.OIDC.Audience})
}

// route is one endpoint; relay/openapi.yaml describes each (a test holds
// them together).
type route struct {
	method, path string
	handler      http.Handler
}

func (s *Server) routes() []route {
	const many = "/api/v1/clusters/{cluster}/namespaces/{namespace}/sessions"
	const one = many + "/{name}"
	return []route{
		{"GET", "/api/v1/me", s.authed(s.me)},
		{"GET", "/api/v1/sessions", s.authed(s.sessions.List)},
		{"GET", "/api/v1/events", s.authed(s.events)},
		{"POST", many, s.authed(s.sessions.Request)},
		{"GET", one, s.authed(s.sessions.Get)},
		{"POST", one + "/approve", s.authed(s.sessions.Approve)},
		{"POST", one + "/deny", s.authed(s.sessions.Deny)},
		{"POST", one + "/start", s.authed(s.live.Start)},
		{"POST", one + "/end", s.authed(s.live.End)},
		{"POST", one + "/extensions", s.authed(s.live.AskExtension)},
		{"POST", one + "/extensions/approve", s.authed(s.live.ApproveExtension)},
		{"POST", one + "/extensions/deny", s.authed(s.live.DenyExtension)},
		{"POST", one + "/review", s.authed(s.sessions.Review)},
		{"GET", one + "/terminal", s.authed(s.live.Terminal)},
		{"GET", one + "/recording", s.authed(s.recording)},
		{"GET", one + "/recording/commands", s.authed(s.recordingCommands)},
		{"GET", one + "/recording/search", s.authed(s.searchRecording)},
		{"GET", "/api/v1/clusters/{cluster}/namespaces/{namespace}/recordings/search", s.authed(s.searchRecordings)},
		{"GET", "/api/v1/signing-key", http.HandlerFunc(s.signingKey)},
		{"GET", "/api/v1/login", http.HandlerFunc(s.loginConfig)},
	}
}

// Handler is the relay's whole HTTP surface.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, r := range s.routes() {
		mux.Handle(r.method+" "+r.path, r.handler)
	}
	if s.console != nil {
		for pattern, h := range s.console.Routes() {
			mux.Handle(pattern, h)
		}
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		api.WriteError(w, &api.Error{Status: http.StatusNotFound, Reason: "NotFound", Message: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)})
	})
	return mux
}

// Ready says whether every cluster and the recording store answer: a relay
// that cannot record must not take sessions (its /readyz, on the probes'
// port).
func (s *Server) Ready(r *http.Request) error {
	var errs []error
	if err := s.store.Check(r.Context()); err != nil {
		errs = append(errs, fmt.Errorf("recording store: %w", err))
	}
	for name, t := range s.sessions.Clusters {
		if _, err := t.Kube.Discovery().ServerVersion(); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Metrics are the relay's Prometheus metrics (its /metrics, on a port of
// its own).
func (s *Server) Metrics() prometheus.Gatherer {
	return prometheus.Gatherers{s.metrics.registry, clusterRequests}
}

// clusterRequests are the requests this relay made of the clusters' API
// servers (client-go's rest_client_requests_total, by code, method and
// host, which controller-runtime keeps): the load each session puts on
// them (docs/scaling.md).
var clusterRequests = prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
	all, err := ctrlmetrics.Registry.Gather()
	var out []*dto.MetricFamily
	for _, f := range all {
		if f.GetName() == "rest_client_requests_total" {
			out = append(out, f)
		}
	}
	return out, err
})

// authed verifies the caller's token and turns a handler's error into a
// JSON answer. Every refusal is audited.
func (s *Server) authed(h api.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		action := r.Pattern
		raw, err := s.credential(r)
		var c api.Caller
		if err == nil {
			c, err = s.auth.Verify(r.Context(), raw)
		}
		if err != nil {
			s.metrics.requests.WithLabelValues(action, "unauthenticated").Inc()
			s.refused(r, "", err)
			api.WriteError(w, &api.Error{Status: http.StatusUnauthorized, Reason: "Unauthenticated", Message: err.Error()})
			return
		}
		r = r.WithContext(lifecycle.WithActorID(r.Context(), c.ID))
		err = h(w, r, c)
		if err == nil {
			s.metrics.requests.WithLabelValues(action, "ok").Inc()
			return
		}
		var ae *api.Error
		if !errors.As(err, &ae) {
			s.log.Error(err, "request failed", "caller", c.Name, "path", r.URL.Path)
			ae = api.Internal(err)
		}
		s.metrics.requests.WithLabelValues(action, ae.Reason).Inc()
		s.refused(r, c.Name, ae)
		api.WriteError(w, ae)
	}
}

// credential is the caller's token: a bearer token, or the console's
// session cookie on a request from the console's own page.
func (s *Server) credential(r *http.Request) (string, error) {
	raw, err := bearer(r)
	if !errors.Is(err, errNoBearer) || s.console == nil {
		return raw, err
	}
	tok, ok := s.console.Token(r)
	if !ok {
		return "", err
	}
	if err := s.console.SameOrigin(r); err != nil {
		return "", fmt.Errorf("%w: %w", errUnauthenticated, err)
	}
	return tok, nil
}

// The rate at which refusals of unauthenticated requests are audited one by
// one (per second), and the burst allowed above it.
const (
	UnauthenticatedAuditRate  = 1
	UnauthenticatedAuditBurst = 20
)

// refused audits a refusal: who asked for what, and why not. Refusals of
// requests without a valid token are rate-limited (see unauthenticated).
func (s *Server) refused(r *http.Request, who string, why error) {
	details := map[string]string{"request": r.Method + " " + r.URL.Path}
	if who == "" {
		who = "unauthenticated"
		if !s.unauthenticated.Allow() {
			s.unaudited.Add(1)
			return
		}
		if n := s.unaudited.Swap(0); n > 0 {
			details["unauditedBefore"] = strconv.FormatInt(n, 10)
		}
	}
	plane := &lifecycle.Machine{Audit: s.audit}
	if err := plane.NotePlane(context.WithoutCancel(r.Context()), v1alpha1.StepRefusal, who, sessionPath(r), why.Error(), details); err != nil {
		s.log.Error(err, "auditing a refusal")
	}
}

func sessionPath(r *http.Request) string {
	if r.PathValue("name") == "" {
		return ""
	}
	return r.PathValue("namespace") + "/" + r.PathValue("name")
}

type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "breakglass_relay_requests_total",
			Help: "API requests by endpoint and result."}, []string{"endpoint", "result"}),
	}
	m.registry.MustRegister(m.requests, audit.SinkFailures, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Adopt takes up the sessions no relay runs any more, until ctx ends
// (live.Sessions.Adopt).
func (s *Server) Adopt(ctx context.Context, every time.Duration) { s.live.Adopt(ctx, every) }

// Close ends or hands over every session this replica runs, ends the event
// streams, and anchors the audit chain's head once more.
func (s *Server) Close(ctx context.Context) {
	s.closeOnce.Do(func() { close(s.closing) })
	s.live.Close(ctx)
	// The head at shutdown, after the last session's end, is anchored too.
	if s.stopCheckpoints != nil {
		s.stopCheckpoints()
		<-s.checkpointed
	}
}
