package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tower-dev/breakglass/api"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/checkpoint"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
	"github.com/tower-dev/breakglass/internal/probes"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/notify"
	"github.com/tower-dev/breakglass/relay"
	relayapi "github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/live"
)

// defaultKubeBurst is the bucket of requests each of the relay's clients
// of an API server has (client-go's, and controller-runtime's one per
// kind, each limited on its own). Idle sessions spend a few requests a
// minute each, far below --kube-api-qps, so the buckets are full when a
// replica dies and another takes up its sessions: about eight requests
// each (docs/scaling.md), so a hundred at once without waiting on the
// sustained rate. The API server's own fairness queues still pace them.
const defaultKubeBurst = 1000

func newRelayCommand() *cobra.Command {
	var configFile, tlsCert, tlsKey string
	var replica, peerURL, peerCA string
	var kubeQPS float32
	var kubeBurst int
	var probeOpts probes.Options
	var logOpts *zap.Options
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Serve the session API and the recorded terminals",
		Long: `The relay is the only identity that takes debug grants. People authenticated by
the portal's OIDC tokens request, approve, deny, start, end and review sessions
through its API (see relay/openapi.yaml) and attach to a session's terminal over
a WebSocket; every byte is recorded to the write-once store before it reaches
anyone, and every step is audited as one JSON line on stdout (and the
configured sinks).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !(kubeQPS > 0) || kubeBurst < 1 { // NaN too
				return fmt.Errorf("--kube-api-qps (%v) must be above 0 and --kube-api-burst (%d) at least 1", kubeQPS, kubeBurst)
			}
			cfg, err := relay.LoadConfig(configFile)
			if err != nil {
				return err
			}
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(logOpts)))
			ctx := ctrl.SetupSignalHandler()
			peers, err := replicaPeers(replica, peerURL, peerCA)
			if err != nil {
				return err
			}
			if peers != nil {
				// Each replica writes a chain of its own: two writers of
				// one chain would fork it.
				cfg.Audit.Chain += "-" + peers.Self
			}
			srv, metrics, closeAll, err := buildRelay(ctx, cfg, peers, kubeQPS, kubeBurst)
			if err != nil {
				return err
			}
			// After the server closed: the notifications of its last
			// moves are delivered before the relay exits.
			defer closeAll()
			probeOpts.Ready, probeOpts.Metrics = srv.Ready, metrics
			probeServers, err := probes.Start(probeOpts)
			if err != nil {
				return err
			}
			defer func() { _ = probeServers.Stop(context.Background()) }()
			// Sessions a relay left (killed, drained) go on here.
			// A third of a heartbeat: a session left by a single relay is
			// taken up within about 3.3 heartbeats of its last, before the
			// sweeper's --heartbeat-timeout (90s by default against 20s
			// heartbeats); one of several replicas gone, within seconds.
			adopting := make(chan struct{})
			go func() {
				defer close(adopting)
				srv.Adopt(ctx, cfg.Limits.Heartbeat.Duration/3)
			}()
			hs := &http.Server{Addr: cfg.Listen, Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
			errc := make(chan error, 1)
			go func() {
				if tlsCert != "" {
					errc <- hs.ListenAndServeTLS(tlsCert, tlsKey)
				} else {
					errc <- hs.ListenAndServe()
				}
			}()
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
			}
			stop, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			<-adopting // a resume under way finishes, and is handed over below
			srv.Close(stop)
			// The Events of the last steps (the hand-overs) are posted
			// beside them: give them a moment before the process exits.
			lifecycle.EventsPosted(5 * time.Second)
			return hs.Shutdown(stop)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "/etc/breakglass/relay.yaml", "the relay's configuration file")
	f.StringVar(&tlsCert, "tls-cert", "", "serve TLS with this certificate (else plain HTTP behind a TLS-terminating ingress)")
	f.StringVar(&tlsKey, "tls-key", "", "the TLS certificate's key")
	f.Float32Var(&kubeQPS, "kube-api-qps", 50, "requests a second each of the relay's clients of a cluster's API server may make, sustained (above 0)")
	f.IntVar(&kubeBurst, "kube-api-burst", defaultKubeBurst, "requests each of the relay's clients of a cluster's API server may make at once after a quiet spell (a takeover's)")
	f.StringVar(&replica, "replica", "", "this relay's name among several replicas (its pod name): set it to run more than one")
	f.StringVar(&peerURL, "peer-url", "", "where a replica is reached, {replica} standing for its name (with --replica)")
	f.StringVar(&peerCA, "peer-ca", "", "the CA bundle the replicas' serving certificates are checked against (default: the system's)")
	probeFlags(cmd, &probeOpts)
	logOpts = logFlags(cmd)
	return cmd
}

// replicaPeers is how this replica reaches the others, or nil when it runs alone.
func replicaPeers(replica, peerURL, caFile string) (*live.Peers, error) {
	if replica == "" {
		if peerURL != "" || caFile != "" {
			return nil, errors.New("--peer-url and --peer-ca are for replicas: set --replica too")
		}
		return nil, nil
	}
	if peerURL == "" {
		return nil, errors.New("--replica needs --peer-url: the replicas pass terminals to each other")
	}
	p := &live.Peers{Self: replica, URL: peerURL}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--peer-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--peer-ca: %s holds no PEM certificate", caFile)
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil // a hop carries the caller's token: straight to the replica
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		p.Transport = t
	}
	return p, p.Check()
}

// buildRelay connects to the issuer, the clusters, the store and the audit
// sinks, and starts delivering notifications. It refuses to start without
// a working recording store. Its metrics are the server's and the
// notifications'.
func buildRelay(ctx context.Context, cfg *relay.Config, peers *live.Peers, kubeQPS float32, kubeBurst int) (*relay.Server, prometheus.Gatherer, func(), error) {
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	fail := func(err error) (*relay.Server, prometheus.Gatherer, func(), error) {
		closeAll()
		return nil, nil, nil, err
	}
	var store recording.Store
	var err error
	if cfg.Recording.S3 != nil {
		if store, err = recording.NewS3(ctx, *cfg.Recording.S3); err != nil {
			return fail(err)
		}
	} else {
		store = &recording.Dir{Root: cfg.Recording.Dir}
	}
	if err := store.Check(ctx); err != nil {
		return fail(fmt.Errorf("the recording store is not usable, so the relay does not start: %w", err))
	}
	sinks := []audit.Sink{&audit.Writer{W: os.Stdout}}
	var last audit.Event
	if cfg.Audit.File != "" {
		f, tail, err := audit.OpenFile(cfg.Audit.File)
		if err != nil {
			return fail(err)
		}
		closers = append(closers, func() { _ = f.Close() })
		sinks, last = append(sinks, f), tail
	}
	if cfg.Audit.URL != "" {
		sinks = append(sinks, audit.NewHTTP(cfg.Audit.URL))
	}
	var anchorer *tlog.Anchorer
	if r := cfg.Rekor; r != nil {
		if anchorer, err = loadAnchorer(ctx, logConfig{url: r.URL, keyRef: r.KeyFile, certFile: r.CertificateFile, version: r.APIVersion, logKeyFile: r.PublicKeyFile}); err != nil {
			return fail(fmt.Errorf("rekor: %w", err))
		}
		cp, err := checkpoint.Latest(ctx, store, cfg.Audit.Chain, anchorer)
		if err != nil {
			return fail(fmt.Errorf("the audit chain's last checkpoint: %w", err))
		}
		switch {
		case cfg.Audit.File != "" && last.Seq < cp.Seq:
			return fail(fmt.Errorf("the audit file %s ends at seq %d, but the chain's head was anchored at seq %d: it was cut short; restore it before the relay starts", cfg.Audit.File, last.Seq, cp.Seq))
		case cfg.Audit.File == "":
			// No file to continue from: the chain goes on from its newest
			// anchored checkpoint (events written after it by a relay that
			// crashed show as a fork to audit verify).
			last = audit.Event{Seq: cp.Seq, Hash: cp.Hash}
		}
	}
	auditLog := audit.NewLog(last, nil, sinks...)
	scheme, err := api.Scheme()
	if err != nil {
		return fail(err)
	}
	portals := map[string]relay.Portal{}
	for _, c := range cfg.Clusters {
		rc, err := restConfig(c.Kubeconfig)
		if err != nil {
			return fail(fmt.Errorf("cluster %s: %w", c.Name, err))
		}
		// client-go's default of 5 requests a second would throttle the
		// heartbeats of a few dozen sessions (each one every 20 s, besides
		// starts and resumes): docs/scaling.md has the figures.
		rc.QPS, rc.Burst = kubeQPS, kubeBurst
		cl, err := client.New(rc, client.Options{Scheme: scheme})
		if err != nil {
			return fail(fmt.Errorf("cluster %s: %w", c.Name, err))
		}
		kube, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return fail(fmt.Errorf("cluster %s: %w", c.Name, err))
		}
		portals[c.Name] = relay.Portal{Client: cl, Kube: kube, Config: rc}
	}
	var notifier relayapi.Notifier
	notifications := prometheus.NewRegistry()
	if cfg.NotifyURL != "" || cfg.Notifications != nil {
		d, err := notify.NewDispatcher(cfg.Notifications, notify.Options{PortalURL: cfg.PortalURL, NotifyURL: cfg.NotifyURL,
			Source: "breakglass/relay", Log: ctrl.Log.WithName("notify")})
		if err != nil {
			return fail(err)
		}
		closers = append(closers, func() {
			// Bounded: a chat server that is down does not hold up the
			// relay's exit for long (what is left is counted dropped).
			stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := d.Close(stop); err != nil {
				ctrl.Log.WithName("notify").Error(err, "notifications left undelivered")
			}
		})
		notifications.MustRegister(d)
		notifier = d
	}
	var checkpoints *checkpoint.Keeper
	if anchorer != nil {
		checkpoints = &checkpoint.Keeper{Log: auditLog, Chain: cfg.Audit.Chain, Store: store, Anchorer: anchorer,
			Retention: cfg.Recording.Retention.Duration, Logger: ctrl.Log.WithName("audit")}
	}
	srv, err := relay.New(ctx, relay.Options{Config: cfg, Portals: portals, Store: store,
		Audit: auditLog, Notifier: notifier, Anchorer: anchorer, Log: ctrl.Log.WithName("relay"),
		Checkpoints: checkpoints, CheckpointEvery: cfg.Audit.CheckpointEvery.Duration, Peers: peers})
	if err != nil {
		return fail(err)
	}
	return srv, prometheus.Gatherers{srv.Metrics(), notifications}, closeAll, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, errors.New("no kubeconfig given and not running in a cluster")
		}
		return rc, nil
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}
