package localplane

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"k8s.io/utils/clock"

	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
	"github.com/tower-dev/breakglass/notify"
	"github.com/tower-dev/breakglass/relay"
)

// startRelay serves the relay's API and console on ln for every plane, as
// the portal's identity on each cluster.
func startRelay(ctx context.Context, ln net.Listener, relayURL, portalURL string, planes []*plane, o Options, issuerURL, inboxURL string,
	store recording.Store, anchorer *tlog.Anchorer, logs io.Writer) (func() error, error) {
	cfg := &relay.Config{
		Listen:      ln.Addr().String(),
		OIDC:        relay.OIDC{Issuer: issuerURL, Audience: relayAudience},
		Console:     &relay.ConsoleConfig{URL: relayURL},
		Permissions: permissions(),
		Limits:      relay.Limits{},
		Recording:   relay.Recording{Dir: filepath.Join(o.Dir, "recordings")},
		NotifyURL:   inboxURL,
		PortalURL:   portalURL,
	}
	cfg.Limits.ReviewWithin.Duration = o.ReviewWithin
	if o.Backstage {
		cfg.OIDC.PortalAudiences = []string{backstageAudience}
	}
	// relay.New defaults it too, but the notifier below links to the
	// console's pages from the portal URL the defaults derive.
	cfg.Default()
	portals := map[string]relay.Portal{}
	for i, p := range planes {
		cfg.Clusters = append(cfg.Clusters, relay.Cluster{Name: p.name, Tier: p.tier(), DebugImage: p.image})
		if i == 0 {
			cfg.Clusters[0].Moderated = o.Moderated
		}
		portals[p.name] = relay.Portal{Client: p.portal.Client, Kube: p.portal.Kube, Config: p.portal.Config}
	}
	auditFile, last, err := audit.OpenFile(filepath.Join(o.Dir, "audit.jsonl"))
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithCancel(context.Background())
	srv, err := relay.New(actx, relay.Options{Config: cfg, Store: store, Clock: clock.RealClock{}, Portals: portals,
		Notifier: &notify.Webhook{URL: inboxURL, PortalURL: cfg.PortalURL},
		Audit:    audit.NewLog(last, nil, &audit.Writer{W: logs}, auditFile), Anchorer: anchorer})
	if err != nil {
		cancel()
		return nil, errors.Join(err, auditFile.Close())
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return func() error {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		srv.Close(sctx)
		err := hs.Shutdown(sctx)
		cancel()
		return errors.Join(err, auditFile.Close())
	}, nil
}
