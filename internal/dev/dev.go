// Package dev runs the whole plane on this machine for a newcomer to walk
// through (make dev, kubectl breakglass dev up): the real kube-apiserver and
// etcd with the chart's manifests, the virtual node, the signature webhook
// with a signed debug image in a local registry, the sweeper, the relay
// with a write-once recording directory, a local OIDC issuer with two demo
// users, and a demo app whose pod is running.
package dev

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/signature"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
	devimage "github.com/tower-dev/breakglass/internal/image"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/test/cluster"
	"github.com/tower-dev/breakglass/test/registry"
	"github.com/tower-dev/breakglass/test/rekor"
)

// Options shape the local plane.
type Options struct {
	Profile policies.Profile
	// RelayAddr is where the relay listens (127.0.0.1:0 picks a port).
	RelayAddr string
	// Dir holds the kubeconfig, tokens, keys and recordings; it is removed
	// at the end.
	Dir string
	// Ready is told what runs, once everything does.
	Ready func(Info)
	// Rekor also runs a transparency log (make rekor builds it; PostgreSQL
	// from Debian) and anchors every recording in it.
	Rekor bool
	// RealNode runs pods on a kubelet with containerd and runc (make node;
	// Debian's containerd, runc and CNI plugins; root) instead of the
	// virtual node: the debug container is the signed image, really run.
	RealNode bool
}

// Info is what a newcomer needs to use the plane.
type Info struct {
	Kubeconfig, RelayURL, Cluster, Namespace, Pod string
	DebugImage                                    string
	Tokens                                        map[string]string // person -> token file
	Started                                       time.Duration
	// RekorURL is the transparency log, when it runs; RelayKey and RekorKey
	// are the relay's and the log's public keys (PEM files) to verify with.
	RekorURL, RelayKey, RekorKey string
}

// devCluster is the local cluster's name in the relay's config.
const devCluster = "dev"

// Demo people: alice owns the shop app; bob approves.
var (
	Alice = oidcissuer.Person{Email: "alice@example.com", Groups: []string{"shop-owners"}}
	Bob   = oidcissuer.Person{Email: "bob@example.com", Groups: []string{"sre"}}
)

// Up brings the plane up, tells o.Ready, and runs until ctx ends; then it
// stops everything it started, in reverse order, and removes o.Dir.
func Up(ctx context.Context, o Options, logs io.Writer) (err error) {
	begin := time.Now()
	log.SetLogger(logr.Discard())
	var stops []func() error
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			err = errors.Join(err, stops[i]())
		}
		err = errors.Join(err, os.RemoveAll(o.Dir))
	}()
	step := func(what string) { fmt.Fprintf(logs, ">> %s (%.1fs)\n", what, time.Since(begin).Seconds()) }

	var c *cluster.Cluster
	var reg *registry.Registry
	if o.RealNode {
		// The node's own registry: on the pods' bridge, which it pulls from.
		step("kube-apiserver, etcd and a real node (kubelet, containerd, runc), with the " + string(o.Profile) + " plane")
		if c, err = cluster.Start(ctx, cluster.Options{Profile: o.Profile, RealNode: true}); err != nil {
			return err
		}
		stops = append(stops, c.Stop)
		reg = c.Registry
	} else {
		reg = registry.Start()
		stops = append(stops, func() error { reg.Close(); return nil })
	}
	step("a signed debug image in the local registry")
	signer, err := registry.NewSigner()
	if err != nil {
		return err
	}
	image, err := pushDebugImage(reg, o.RealNode)
	if err != nil {
		return err
	}
	if err := signer.Sign(image); err != nil {
		return err
	}
	keyFile, err := signer.WritePublicKey(o.Dir, "cosign.pub")
	if err != nil {
		return err
	}

	if c == nil {
		step("kube-apiserver, etcd and the virtual node, with the " + string(o.Profile) + " plane")
		if c, err = cluster.Start(ctx, cluster.Options{Profile: o.Profile, DebugImages: []string{image.String()}, VirtualNode: true}); err != nil {
			return err
		}
		stops = append(stops, c.Stop)
	} else if err := c.Apply(ctx, v1alpha1.DefaultPolicyParams(image.String())); err != nil {
		return err
	}
	kubeconfig := filepath.Join(o.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(c.KubeConfig("breakglass-dev", "shop"), kubeconfig); err != nil {
		return err
	}

	step("the signature webhook")
	stopWebhook, err := startWebhook(ctx, c, o.Dir, reg.Host, keyFile)
	if err != nil {
		return err
	}
	stops = append(stops, stopWebhook)

	store := &recording.Dir{Root: filepath.Join(o.Dir, "recordings")}
	var anchorer *tlog.Anchorer
	if o.Rekor {
		step("Rekor on Trillian and PostgreSQL")
		log, err := rekor.Start(ctx)
		if err != nil {
			return err
		}
		stops = append(stops, log.Stop)
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
		if err != nil {
			return err
		}
		anchorer = &tlog.Anchorer{URL: log.URL, Signer: sv}
		// The keys a reviewer pins: the relay's and the log's, beside the recordings.
		pub, err := anchorer.PublicKey()
		if err != nil {
			return err
		}
		logKey, err := log.PublicKey(ctx)
		if err != nil {
			return err
		}
		for name, data := range map[string][]byte{"relay.pub": pub, "rekor.pub": logKey} {
			if err := os.WriteFile(filepath.Join(o.Dir, name), data, 0o644); err != nil {
				return err
			}
		}
	}
	finalizer := &recording.SessionFinalizer{Store: store, Cluster: devCluster, Retention: 24 * time.Hour, URI: "file://" + store.Root + "/", Anchorer: anchorer}
	step("the sweeper")
	sweeperUser, err := c.Sweeper()
	if err != nil {
		return err
	}
	// SeveralInOneProcess: the walkthrough tests bring the plane up more
	// than once in one process (on each node).
	opts := sweeper.Options{MetricsAddr: "0", HealthAddr: "0", Evidence: finalizer, SeveralInOneProcess: true}
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
	stops = append(stops, func() error { stopSweeper(); return <-sweeperDone })

	step("the OIDC issuer and the relay")
	issuer, err := oidcissuer.Start()
	if err != nil {
		return err
	}
	stops = append(stops, issuer.Close)
	tokens := map[string]string{}
	for _, p := range []oidcissuer.Person{Alice, Bob} {
		tok, err := issuer.Token(p, "tower", 12*time.Hour)
		if err != nil {
			return err
		}
		file := filepath.Join(o.Dir, p.Email[:len(p.Email)-len("@example.com")]+".token")
		if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
			return err
		}
		tokens[p.Email] = file
	}
	relayURL, stopRelay, err := startRelay(ctx, c, o, issuer.URL, image.String(), store, anchorer, logs)
	if err != nil {
		return err
	}
	stops = append(stops, stopRelay)

	step("the demo app")
	pod, err := demoApp(ctx, c, "shop", image.String(), o.RealNode)
	if err != nil {
		return err
	}
	if o.Ready != nil {
		info := Info{Kubeconfig: kubeconfig, RelayURL: relayURL, Cluster: "dev", Namespace: "shop", Pod: pod, DebugImage: image.String(),
			Tokens: tokens, Started: time.Since(begin)}
		if anchorer != nil {
			info.RekorURL = anchorer.URL
			info.RelayKey, info.RekorKey = filepath.Join(o.Dir, "relay.pub"), filepath.Join(o.Dir, "rekor.pub")
		}
		o.Ready(info)
	}
	<-ctx.Done()
	fmt.Fprintln(logs, ">> stopping")
	return nil
}

func startRelay(ctx context.Context, c *cluster.Cluster, o Options, issuerURL, image string, store recording.Store, anchorer *tlog.Anchorer, logs io.Writer) (string, func() error, error) {
	tier := relay.Flight
	if o.Profile == policies.Ground {
		tier = relay.Ground
	}
	cfg := &relay.Config{
		Listen: o.RelayAddr, PortalURL: "http://localhost:3000",
		OIDC:     relay.OIDC{Issuer: issuerURL, Audience: "tower"},
		Clusters: []relay.Cluster{{Name: devCluster, Tier: tier, DebugImage: image}},
		Permissions: []relay.Permission{
			{Groups: []string{"shop-owners"}, Namespaces: []string{"shop"}, Actions: []relay.Action{relay.ActionRequest}},
			{Groups: []string{"sre"}, Namespaces: []string{"*"}, Actions: []relay.Action{relay.ActionApprove, relay.ActionEnd, relay.ActionReview, relay.ActionViewSensitive}},
		},
		Recording: relay.Recording{Dir: filepath.Join(o.Dir, "recordings")},
	}
	if err := cfg.Complete(); err != nil {
		return "", nil, err
	}
	portal, err := c.Portal()
	if err != nil {
		return "", nil, err
	}
	actx, cancel := context.WithCancel(context.Background())
	auth, err := relay.NewAuthenticator(actx, cfg.OIDC, nil)
	if err != nil {
		cancel()
		return "", nil, err
	}
	auditFile, last, err := audit.OpenFile(filepath.Join(o.Dir, "audit.jsonl"))
	if err != nil {
		cancel()
		return "", nil, err
	}
	srv, err := relay.NewServer(relay.Options{Config: cfg, Auth: auth, Store: store, Clock: clock.RealClock{},
		Targets: map[string]relay.Target{"dev": {Client: portal.Client, Kube: portal.Kube, Config: portal.Config}},
		Audit:   audit.NewLog(last, nil, &audit.Writer{W: logs}, auditFile), Anchorer: anchorer})
	if err != nil {
		cancel()
		return "", nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		cancel()
		return "", nil, fmt.Errorf("the relay's address: %w", err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	stop := func() error {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		srv.Close(sctx)
		err := hs.Shutdown(sctx)
		cancel()
		return errors.Join(err, auditFile.Close())
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// pushDebugImage pushes the project's debug image (the machine's static
// busybox, as make debug-image builds it), or, without busybox-static, a
// stand-in: the virtual node runs the machine's own programs either way (a
// real node needs the real image).
func pushDebugImage(reg *registry.Registry, realNode bool) (name.Digest, error) {
	if _, err := os.Stat("/bin/busybox"); err != nil && !realNode {
		return reg.Push("breakglass/debug", "dev")
	}
	img, err := devimage.BuildDebug("/bin/busybox", time.Unix(0, 0).UTC())
	if err != nil {
		return name.Digest{}, err
	}
	return reg.PushImage("breakglass/debug", "dev", img)
}
