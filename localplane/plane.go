package localplane

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
	"github.com/tower-dev/breakglass/localplane/cluster"
	"github.com/tower-dev/breakglass/notify"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay"
	"github.com/tower-dev/breakglass/relay/client"
	"github.com/tower-dev/breakglass/sweeper"
)

// demoNamespace is where the demo app runs, on every cluster.
const demoNamespace = "shop"

// relayAudience is the relay's OIDC client: the console signs in as it.
const relayAudience = "tower"

// plane is one cluster with the plane installed: its webhook, its sweeper
// and the demo app. The relay serves them all.
type plane struct {
	name     string
	profile  policies.Profile
	dir      string
	realNode bool
	c        *cluster.Cluster
	// kubeconfig is the cluster admin's, in the demo namespace.
	kubeconfig string
	pod        string
	portal     *cluster.User
	// image is the signed debug image, by digest.
	image string
	// relayURL is the relay's, written into the kubeconfig's context.
	relayURL string
}

// kubeConfig is the cluster admin's kubeconfig; its context tells
// kubectl breakglass the relay and the relay's name for the cluster.
func (p *plane) kubeConfig() clientcmdapi.Config {
	name := "breakglass-" + p.name
	k := p.c.KubeConfig(name, demoNamespace)
	ext, _ := json.Marshal(map[string]string{"cluster": p.name, "relay": p.relayURL})
	k.Contexts[name].Extensions = map[string]runtime.Object{client.ContextExtension: &runtime.Unknown{Raw: ext, ContentType: runtime.ContentTypeJSON}}
	return k
}

// sweepLimits are the sweeper's session limits the local plane sets (zero:
// the sweeper's own defaults).
type sweepLimits struct{ ReviewWithin, ApprovedFor time.Duration }

// start brings the cluster up (unless it runs already, on a real node),
// with the webhook, the sweeper and the demo app.
func (p *plane) start(ctx context.Context, step func(string), stops *[]func() error, image, registryHost, keyFile string,
	store *recording.Dir, anchorer *tlog.Anchorer, notes *notify.Webhook, limits sweepLimits) error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	p.image = image
	var err error
	if p.c == nil {
		step("cluster " + p.name + ": kube-apiserver, etcd and the virtual node, with the " + string(p.profile) + " plane")
		if p.c, err = cluster.Start(ctx, cluster.Options{Profile: p.profile, DebugImages: []string{image}, VirtualNode: true,
			Progress: func(what string) { step("cluster " + p.name + ": " + what) }}); err != nil {
			return err
		}
		*stops = append(*stops, p.c.Stop)
	} else if err := p.c.SetParams(ctx, policies.DefaultParams(image)); err != nil {
		return err
	}
	p.kubeconfig = filepath.Join(p.dir, "kubeconfig")
	if err := clientcmd.WriteToFile(p.kubeConfig(), p.kubeconfig); err != nil {
		return err
	}

	step("cluster " + p.name + ": the signature webhook")
	stopWebhook, err := startWebhook(ctx, p.c, p.dir, registryHost, keyFile)
	if err != nil {
		return err
	}
	*stops = append(*stops, stopWebhook)

	step("cluster " + p.name + ": the sweeper")
	finalizer := &recording.SessionFinalizer{Store: store, Cluster: p.name, Retention: 24 * time.Hour,
		URI: "file://" + store.Root + "/", Anchorer: anchorer}
	sweeperUser, err := p.c.Sweeper()
	if err != nil {
		return err
	}
	// SeveralInOneProcess: one sweeper per cluster, and the walkthrough
	// tests bring the plane up more than once in one process.
	opts := sweeper.Options{MetricsAddr: "0", HealthAddr: "0", Evidence: finalizer, SeveralInOneProcess: true,
		Notifier: notes, ReviewWithin: limits.ReviewWithin, ApprovedFor: limits.ApprovedFor}
	if anchorer != nil {
		opts.Anchors = finalizer
	}
	mgr, err := sweeper.New(sweeperUser.Config, opts)
	if err != nil {
		return err
	}
	sctx, stopSweeper := context.WithCancel(ctx)
	sweeperDone := make(chan error, 1)
	go func() { sweeperDone <- mgr.Start(sctx) }()
	*stops = append(*stops, func() error { stopSweeper(); return <-sweeperDone })

	step("cluster " + p.name + ": the demo app")
	if p.pod, err = demoApp(ctx, p.c, demoNamespace, image, p.realNode); err != nil {
		return err
	}
	p.portal, err = p.c.Portal()
	return err
}

func (p *plane) tier() relay.Tier {
	if p.profile == policies.Ground {
		return relay.Ground
	}
	return relay.Flight
}

// notifier posts a cluster's notifications to the inbox, linking into the
// relay's console.
func notifier(inboxURL, portalURL, cluster string) *notify.Webhook {
	return &notify.Webhook{URL: inboxURL, PortalURL: portalURL, Cluster: cluster, FallbackReviewer: FallbackReviewer}
}
