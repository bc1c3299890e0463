package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/notify"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/sweeper"
)

// planeAsInstalled sets what the sweeper compares the plane with: the
// profile and params the chart rendered it from.
func planeAsInstalled(opts *sweeper.Options, profile, params string) error {
	if profile == "" {
		if params != "" {
			return errors.New("--params: needs --profile")
		}
		return nil
	}
	p := policies.Profile(profile)
	if !slices.Contains(policies.Profiles, p) {
		return fmt.Errorf("--profile: %q is no policy set (ground or flight)", profile)
	}
	if params == "" {
		return errors.New("--profile: needs --params, the chart's params values as JSON")
	}
	v := policies.DefaultParams()
	if err := json.Unmarshal([]byte(params), &v); err != nil {
		return fmt.Errorf("--params: not the chart's params as JSON: %w", err)
	}
	if errs := v.Validate(); len(errs) > 0 {
		return fmt.Errorf("--params: %w", errs.ToAggregate())
	}
	opts.Profile, opts.Params = p, v
	return nil
}

func newSweeperCommand() *cobra.Command {
	var (
		opts                                   sweeper.Options
		notifyURL, portalURL, fallbackReviewer string
		notificationsFile                      string
		recordingDir, rekorURL, rekorKey       string
		clusterName, rekorCert, auditFile      string
		rekorPublicKey                         string
		rekorVersion                           int
		s3opts                                 recording.S3Options
		retention                              time.Duration
		profile, params                        string
	)
	var logOpts *zap.Options
	cmd := &cobra.Command{
		Use:   "sweeper",
		Short: "Delete expired grants and finish sessions the relay abandoned",
		Long: `The sweeper deletes every RoleBinding labelled breakglass.tower.dev/session when
its cleanup.kyverno.io/ttl runs out, ends Active sessions past their hard stop
or whose relay heartbeat is stale (recycling the pod unless "keep the pod" was
approved, deleting copies and the grant), recycles pods that still carry a debug
container of an ended session, and tells the fallback reviewer about overdue
reviews. It reads all of its state from the cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if notifyURL != "" {
				if u, err := url.Parse(notifyURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") {
					return errors.New("--notify-url: must be an http(s) URL")
				}
				opts.Notifier = &notify.Webhook{URL: notifyURL, PortalURL: portalURL, Cluster: clusterName, FallbackReviewer: fallbackReviewer}
			}
			if notificationsFile != "" {
				d, err := sweeperNotifications(notificationsFile, notify.Options{PortalURL: portalURL, Cluster: clusterName,
					FallbackReviewer: fallbackReviewer, NotifyURL: notifyURL, Source: "breakglass/sweeper", Log: ctrl.Log.WithName("notify")})
				if err != nil {
					return err
				}
				defer func() {
					stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if err := d.Close(stop); err != nil {
						ctrl.Log.WithName("notify").Error(err, "notifications left undelivered")
					}
				}()
				opts.Notifier = d
			}
			if err := planeAsInstalled(&opts, profile, params); err != nil {
				return err
			}
			store, uri, err := evidenceStore(cmd.Context(), recordingDir, s3opts)
			if err != nil {
				return err
			}
			if store != nil {
				if clusterName == "" {
					return errors.New("--cluster: required with an evidence store: recordings are kept under the cluster's name, as the relay's config names it")
				}
				finalizer := &recording.SessionFinalizer{Store: store, Cluster: clusterName, Retention: retention, URI: uri}
				if rekorURL != "" {
					a, err := loadAnchorer(cmd.Context(), logConfig{url: rekorURL, keyRef: rekorKey, certFile: rekorCert, version: rekorVersion, logKeyFile: rekorPublicKey})
					if err != nil {
						return err
					}
					finalizer.Anchorer, opts.Anchors = a, finalizer
				}
				opts.Evidence = finalizer
			}
			sinks := []audit.Sink{&audit.Writer{W: os.Stdout}}
			var last audit.Event
			if auditFile != "" {
				f, tail, err := audit.OpenFile(auditFile)
				if err != nil {
					return err
				}
				defer f.Close()
				sinks, last = append(sinks, f), tail
			}
			opts.Audit = audit.NewLog(last, nil, sinks...)
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(logOpts)))
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return err
			}
			mgr, err := sweeper.New(cfg, opts)
			if err != nil {
				return err
			}
			if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
				return err
			}
			if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
				return err
			}
			err = mgr.Start(ctrl.SetupSignalHandler())
			// The Events of its last steps are posted beside them.
			lifecycle.EventsPosted(5 * time.Second)
			return err
		},
	}
	f := cmd.Flags()
	f.DurationVar(&opts.HeartbeatTimeout, "heartbeat-timeout", 90*time.Second, "how stale the relay's heartbeat may get before a session counts as abandoned")
	f.DurationVar(&opts.Grace, "grace", 30*time.Second, "how long after a session's hard stop the relay has to end it itself")
	f.DurationVar(&opts.ReviewWithin, "review-within", 24*time.Hour, "when a glass-broken session's review falls due, from its request")
	f.DurationVar(&opts.PendingFor, "pending-for", time.Hour, "how long a request waits for a decision before it expires")
	f.DurationVar(&opts.ApprovedFor, "approved-for", 30*time.Minute, "how long an approved session waits to be started before it expires")
	f.DurationVar(&opts.StandingEvery, "standing-every", 5*time.Minute, "how often the backstop asks the authorizer what the portal may do at rest (every RBAC change asks too)")
	f.StringSliceVar(&opts.StandingSample, "standing-sample", []string{"default"}, "namespaces the backstop asks about beside those with a grant or a Session")
	f.StringVar(&profile, "profile", "", "the policy set the chart installed (ground or flight): with --params, the sweeper compares the plane's policies, bindings and roles with it")
	f.StringVar(&params, "params", "", "the chart's params values as JSON, as it rendered them into the policies")
	f.DurationVar(&opts.DriftEvery, "drift-every", 30*time.Second, "how often the plane is compared with what the chart rendered (every change compares too)")
	f.BoolVar(&opts.LeaderElection, "leader-elect", true, "run one active sweeper among replicas")
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8080", "Prometheus metrics address (0 to turn off)")
	f.StringVar(&opts.HealthAddr, "health-probe-bind-address", ":8081", "/healthz and /readyz address")
	logOpts = logFlags(cmd)
	f.StringVar(&notifyURL, "notify-url", "", "webhook that receives notifications (JSON POST)")
	f.StringVar(&portalURL, "portal-url", "", "the portal's base URL, for deep links to sessions")
	f.StringVar(&fallbackReviewer, "fallback-reviewer", "", "who is told when a review is overdue")
	f.StringVar(&notificationsFile, "notifications", "", "route notifications to Slack, Teams, e-mail and webhooks as this file says (the relay config's notifications section on its own); --notify-url, if set too, still gets every event")
	f.StringVar(&auditFile, "audit-file", "", "append the sweeper's audit chain to this file too, and continue its chain from it after a restart")
	f.StringVar(&clusterName, "cluster", "", "this cluster's name in the relay's config: part of every recording's key")
	f.StringVar(&recordingDir, "recording-dir", "", "the write-once recording directory, to finalize the evidence of swept sessions")
	f.StringVar(&s3opts.Bucket, "s3-bucket", "", "the evidence bucket (S3 with Object Lock), instead of --recording-dir; credentials from the environment or workload identity")
	f.StringVar(&s3opts.Region, "s3-region", "", "the bucket's region")
	f.StringVar(&s3opts.Endpoint, "s3-endpoint", "", "a non-AWS S3 endpoint")
	f.BoolVar(&s3opts.PathStyle, "s3-path-style", false, "address the bucket in the path, not the host name")
	f.DurationVar(&retention, "retention", 365*24*time.Hour, "how long finalized evidence is locked")
	f.StringVar(&rekorURL, "rekor-url", "", "the transparency log: anchor finalized recordings whose anchor is still pending")
	f.StringVar(&rekorKey, "rekor-key", "", "the signing key (PEM) for --rekor-url")
	f.StringVar(&rekorCert, "rekor-certificate", "", "the signing key's certificate (PEM) naming the plane's identity, for --rekor-url")
	f.IntVar(&rekorVersion, "rekor-api-version", 1, "the log's API: 1 (Rekor v1) or 2 (Rekor v2, tile-based; needs --rekor-public-key)")
	f.StringVar(&rekorPublicKey, "rekor-public-key", "", "the log's public key (PEM), pinned: required for Rekor v2")
	f.DurationVar(&opts.AnchorAfter, "anchor-after", 2*time.Minute, "how long after a session's end the relay has to anchor it itself")
	return cmd
}

// sweeperNotifications is the Dispatcher of a notifications file, its
// counters registered with the sweeper's metrics.
func sweeperNotifications(file string, o notify.Options) (*notify.Dispatcher, error) {
	c, err := notify.LoadConfig(file)
	if err != nil {
		return nil, fmt.Errorf("--notifications: %w", err)
	}
	d, err := notify.NewDispatcher(c, o)
	if err != nil {
		return nil, fmt.Errorf("--notifications: %w", err)
	}
	if err := ctrlmetrics.Registry.Register(d); err != nil {
		_ = d.Close(context.Background())
		return nil, err
	}
	return d, nil
}

// evidenceStore is the store the sweeper finalizes swept sessions' evidence
// in: the bucket, or the directory, or none; and its address for the
// Session's record.
func evidenceStore(ctx context.Context, dir string, o recording.S3Options) (recording.Store, string, error) {
	switch {
	case dir != "" && o.Bucket != "":
		return nil, "", errors.New("--recording-dir and --s3-bucket: one evidence store, not two")
	case o.Bucket != "":
		s, err := recording.NewS3(ctx, o)
		if err != nil {
			return nil, "", err
		}
		if err := s.Check(ctx); err != nil {
			return nil, "", err
		}
		return s, "s3://" + o.Bucket + "/", nil
	case dir != "":
		return &recording.Dir{Root: dir}, "file://" + dir + "/", nil
	}
	return nil, "", nil
}
