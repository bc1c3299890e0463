package sweeper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tower-dev/breakglass/api"
	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/policies"
)

// Options configure the sweeper.
type Options struct {
	// Clock drives every TTL, deadline and requeue; tests move it.
	Clock clock.WithTicker
	// HeartbeatTimeout, Grace, ReviewWithin, PendingFor and ApprovedFor: see SessionSweeper.
	HeartbeatTimeout time.Duration
	Grace            time.Duration
	ReviewWithin     time.Duration
	PendingFor       time.Duration
	ApprovedFor      time.Duration
	Notifier         Notifier
	Evidence         EvidenceFinalizer
	// Anchors, when set, anchors recordings whose anchor is still pending
	// AnchorAfter (default 2m) after their end: the relay died or stopped
	// before the transparency log answered.
	Anchors     EvidenceAnchorer
	AnchorAfter time.Duration
	// NewPodGrace is how long a new copy or debugged pod is given for its
	// Session and grant to reach the sweeper's cache before their absence
	// counts (default 5s); see PodSweeper.
	NewPodGrace time.Duration
	// Expired is told of each grant deleted, and how late (for measurements).
	Expired func(rb *rbacv1.RoleBinding, late time.Duration)
	// StandingEvery is how often the backstop asks the authorizer what the
	// portal may do at rest (default 5m; every RBAC change asks too), and
	// StandingSample the namespaces it asks about beside those with a
	// grant or a Session (default: default). See StandingRights.
	StandingEvery  time.Duration
	StandingSample []string
	// Profile and Params are what the chart installed the plane with:
	// PlaneDrift compares the plane with them every DriftEvery (default
	// 30s) and at each change. With no Profile it does not run.
	Profile    policies.Profile
	Params     policies.Params
	DriftEvery time.Duration

	// LeaderElection makes one sweeper of several act at a time.
	LeaderElection bool
	// LeaseDuration, RenewDeadline and RetryPeriod tune the election; zero keeps the defaults.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// MetricsAddr and HealthAddr are listen addresses; "0" turns one off.
	MetricsAddr, HealthAddr string
	// Audit receives every step the sweeper takes (default: a chain on
	// stdout, as the relay's).
	Audit *audit.Log
	// SeveralInOneProcess lets tests run more than one sweeper in a process;
	// controller names are otherwise unique per process (for metrics).
	SeveralInOneProcess bool
}

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.AnchorAfter == 0 {
		o.AnchorAfter = 2 * time.Minute
	}
	if o.HeartbeatTimeout == 0 {
		o.HeartbeatTimeout = 90 * time.Second
	}
	if o.Grace == 0 {
		o.Grace = 30 * time.Second
	}
	if o.NewPodGrace == 0 {
		o.NewPodGrace = 5 * time.Second
	}
	if o.ReviewWithin == 0 {
		o.ReviewWithin = 24 * time.Hour
	}
	if o.PendingFor == 0 {
		o.PendingFor = time.Hour
	}
	if o.ApprovedFor == 0 {
		o.ApprovedFor = 30 * time.Minute
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = "0"
	}
	if o.HealthAddr == "" {
		o.HealthAddr = "0"
	}
	if o.StandingEvery == 0 {
		o.StandingEvery = 5 * time.Minute
	}
	if o.DriftEvery == 0 {
		o.DriftEvery = 30 * time.Second
	}
	if o.StandingSample == nil {
		o.StandingSample = []string{"default"}
	}
	if o.Audit == nil {
		o.Audit = audit.NewLog(audit.Event{}, nil, &audit.Writer{W: os.Stdout})
	}
}

// New builds the sweeper's manager: controllers for session grants, for
// Sessions and for debugged pods, behind leader election when asked.
func New(cfg *rest.Config, opts Options) (manager.Manager, error) {
	opts.defaults()
	scheme, err := api.Scheme()
	if err != nil {
		return nil, err
	}
	// The sweeper caches only session grants, never every RoleBinding.
	sessionLabel, err := labels.NewRequirement(v1alpha1.SessionLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	mopts := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:        opts.HealthAddr,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              "breakglass-sweeper",
		LeaderElectionNamespace:       v1alpha1.Namespace,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: &opts.SeveralInOneProcess},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&rbacv1.RoleBinding{}: {Label: labels.NewSelector().Add(*sessionLabel)},
			// Every pod, stripped to its session label and debug container
			// names: no selector can pick out pods with an ephemeral container.
			// Reads of whole pods go through the API reader.
			&corev1.Pod{}: {Transform: slimPod},
		}},
	}
	if opts.LeaseDuration > 0 {
		mopts.LeaseDuration, mopts.RenewDeadline, mopts.RetryPeriod = &opts.LeaseDuration, &opts.RenewDeadline, &opts.RetryPeriod
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("the sweeper's manager: %w", err)
	}
	// Requeues wait on the injected clock, so a grant is requeued for exactly
	// its expiry and a test can move time instead of sleeping.
	newQueue := func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, Clock: opts.Clock})
	}
	grants := &GrantSweeper{Client: mgr.GetClient(), Clock: opts.Clock, Expired: opts.Expired, Audit: opts.Audit, Identity: v1alpha1.SweeperUsername}
	if err := ctrl.NewControllerManagedBy(mgr).Named("grants").For(&rbacv1.RoleBinding{}).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: 4}).Complete(grants); err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	sessions := &SessionSweeper{
		Client: mgr.GetClient(), Kube: kube, Reader: mgr.GetAPIReader(), Clock: opts.Clock, Identity: v1alpha1.SweeperUsername, Audit: opts.Audit,
		HeartbeatTimeout: opts.HeartbeatTimeout, Grace: opts.Grace, ReviewWithin: opts.ReviewWithin,
		PendingFor: opts.PendingFor, ApprovedFor: opts.ApprovedFor,
		Notifier: opts.Notifier, Evidence: opts.Evidence, Anchors: opts.Anchors, AnchorAfter: opts.AnchorAfter,
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("sessions").For(&v1alpha1.Session{}).
		WithOptions(controller.Options{NewQueue: newQueue}).Complete(sessions); err != nil {
		return nil, err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podSessionIndex, indexPodSessions); err != nil {
		return nil, fmt.Errorf("indexing pods by session: %w", err)
	}
	pods := &PodSweeper{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Clock: opts.Clock, Grace: opts.Grace, NewPodGrace: opts.NewPodGrace,
		Audit: opts.Audit, Identity: v1alpha1.SweeperUsername}
	// A Session or grant that changes (or goes) sends its pods to be judged
	// again; the pods' own requeues cover the passing of time.
	if err := ctrl.NewControllerManagedBy(mgr).Named("pods").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(isDebugged))).
		Watches(&v1alpha1.Session{}, handler.EnqueueRequestsFromMapFunc(pods.podsOf)).
		Watches(&rbacv1.RoleBinding{}, handler.EnqueueRequestsFromMapFunc(pods.podsOf)).
		WithOptions(controller.Options{NewQueue: newQueue}).Complete(pods); err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(&StandingRights{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Kube: kube, Metadata: meta, Clock: opts.Clock,
		Audit: opts.Audit, Every: opts.StandingEvery, Sample: opts.StandingSample}); err != nil {
		return nil, err
	}
	if opts.Profile != "" {
		if err := mgr.Add(&PlaneDrift{Reader: mgr.GetAPIReader(), Kube: kube, Metadata: meta, Clock: opts.Clock, Audit: opts.Audit,
			Every: opts.DriftEvery, Profile: opts.Profile, Params: opts.Params}); err != nil {
			return nil, err
		}
	}
	// One sweeper's figures per process (tests run several): the first one's.
	for _, c := range []prometheus.Collector{PlaneMetrics(mgr.GetClient(), opts.Clock), grantLateness, audit.SinkFailures, standingRights, planeDrift} {
		var already prometheus.AlreadyRegisteredError
		if err := ctrlmetrics.Registry.Register(c); err != nil && (!errors.As(err, &already) || !opts.SeveralInOneProcess) {
			return nil, fmt.Errorf("the sweeper's metrics: %w", err)
		}
	}
	return mgr, nil
}
