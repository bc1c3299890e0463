// Package localplane runs the whole plane on this machine for a newcomer to walk
// through (make dev, bin/breakglass-dev): the real kube-apiserver and
// etcd with the chart's manifests, the virtual node, the signature webhook
// with a signed debug image in a local registry, the sweeper, the relay
// with its web console and a write-once recording directory, a local OIDC
// issuer with a demo person for every role, and a demo app whose pod is
// running; with Both, a second cluster of the other profile, served by the
// same relay as in production.
package localplane

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
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/signature"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
	devimage "github.com/tower-dev/breakglass/internal/image"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/localplane/cluster"
	"github.com/tower-dev/breakglass/localplane/registry"
	"github.com/tower-dev/breakglass/localplane/rekor"
	"github.com/tower-dev/breakglass/policies"
)

// Options shape the local plane.
type Options struct {
	// Profile is the first cluster's, and its name ("flight" or "ground").
	Profile policies.Profile
	// Both also runs a cluster of the other profile, on the virtual node.
	Both bool
	// RelayAddr is where the relay listens (127.0.0.1:0 picks a port).
	RelayAddr string
	// Dir holds the kubeconfigs, tokens, keys, notifications and
	// recordings; it is removed at the end.
	Dir string
	// Ready is told what runs, once everything does.
	Ready func(Info)
	// Rekor also runs a transparency log (make rekor builds it; PostgreSQL
	// from Debian) and anchors every recording in it.
	Rekor bool
	// RealNode runs the first cluster's pods on a kubelet with containerd
	// and runc (make node; Debian's containerd, runc and CNI plugins; root)
	// instead of the virtual node: the debug container is the signed image,
	// really run.
	RealNode bool
	// ReviewWithin is when a glass-broken session's review falls due
	// (default 24h); after it, the fallback reviewer is told.
	ReviewWithin time.Duration
	// ApprovedFor is how long an approved session waits for its start
	// before the sweeper expires it (default the sweeper's, 30m).
	ApprovedFor time.Duration
	// Backstage also runs Backstage's backend with Tower's plugins in front
	// of the relay (make backstage; PostgreSQL from Debian), signing people
	// in at the local issuer. BackstageAllowAll swaps its break-glass
	// policy for one that allows everything, to show the relay refusing.
	Backstage, BackstageAllowAll bool
	// Moderated are the first cluster's namespaces whose sessions need a
	// moderator watching (the relay's clusters[].moderated).
	Moderated []string
	// TokenTTL is how long the issuer's ID tokens last when people sign
	// in (default 10 minutes).
	TokenTTL time.Duration
	// Progress, if set, is told each step as it begins: a caller waiting
	// for Ready knows the plane is still coming up, and which step it is at.
	Progress func(Step)
}

// Step is one step of bringing the plane up.
type Step struct {
	What string
	// Waiting is a step that waits on another process, which ends it on its
	// own (another test's real node on this machine): no hang of the plane.
	Waiting bool
	// At is when it began, after Up was called; Took is how long it took
	// (zero until the next step begins).
	At, Took time.Duration
}

// Info is what a newcomer needs to use the plane.
type Info struct {
	// Kubeconfig, Cluster and Pod are the first cluster's.
	Kubeconfig, RelayURL, Cluster, Namespace, Pod string
	Clusters                                      []ClusterInfo
	// ConsoleURL is the web console; Notifications the file the
	// notifications go to, one JSON object per line.
	ConsoleURL, Notifications string
	DebugImage                string
	Tokens                    map[string]string // person's email -> token file
	Started                   time.Duration
	// Steps are the steps Up took, each with how long it took.
	Steps []Step
	// BackstageURL is Backstage's backend (and app), when it runs;
	// BackstageLog is the file its log goes to.
	BackstageURL, BackstageLog string
	// IssuerURL is the local OIDC issuer people sign in at.
	IssuerURL string
	// RekorURL is the transparency log, when it runs; RelayKey and RekorKey
	// are the relay's and the log's public keys (PEM files) to verify with.
	RekorURL, RelayKey, RekorKey string
}

// ClusterInfo is one of the plane's clusters.
type ClusterInfo struct {
	Name       string
	Profile    policies.Profile
	Kubeconfig string
	// Pod is the demo app's first pod (in namespace shop).
	Pod string
}

// Up brings the plane up, tells o.Ready, and runs until ctx ends; then it
// stops everything it started, in reverse order, and removes o.Dir.
func Up(ctx context.Context, o Options, logs io.Writer) (err error) {
	begin := time.Now()
	log.SetLogger(logr.Discard())
	if o.Both && o.RealNode {
		return errors.New("one real node per machine: run the second cluster without --real-node, or only one cluster")
	}
	if o.ReviewWithin <= 0 {
		o.ReviewWithin = 24 * time.Hour
	}
	var stops []func() error
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			err = errors.Join(err, stops[i]())
		}
		err = errors.Join(err, os.RemoveAll(o.Dir))
	}()
	var steps []Step
	step := func(what string) {
		at := time.Since(begin)
		if n := len(steps); n > 0 {
			steps[n-1].Took = at - steps[n-1].At
		}
		steps = append(steps, Step{What: what, At: at, Waiting: strings.Contains(what, cluster.WaitingPrefix)})
		fmt.Fprintf(logs, ">> %s (%.1fs)\n", what, at.Seconds())
		if o.Progress != nil {
			o.Progress(steps[len(steps)-1])
		}
	}

	// The relay's address first: the console's sign-in, the issuer's
	// client and every deep link name it.
	relayLn, err := net.Listen("tcp", o.RelayAddr)
	if err != nil {
		return fmt.Errorf("the relay's address: %w", err)
	}
	stops = append(stops, func() error { _ = relayLn.Close(); return nil })
	relayURL := "http://" + relayLn.Addr().String()
	// Where notifications link: the console, or Tower's pages in Backstage
	// when it runs (its address is taken now, before anything links to it).
	portalURL := relayURL + "/console"
	var backstageURL, backstageLog string
	var backstageLn net.Listener
	if o.Backstage {
		// Held until Backstage starts, so that nobody else on this machine
		// takes the address sign-in redirects and links name meanwhile.
		if backstageLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
		stops = append(stops, func() error { _ = backstageLn.Close(); return nil })
		backstageURL = "http://" + backstageLn.Addr().String()
		portalURL = backstageURL + "/break-glass"
	}

	var first *cluster.Cluster
	var reg *registry.Registry
	if o.RealNode {
		// The node's own registry: on the pods' bridge, which it pulls from.
		step("kube-apiserver, etcd and a real node (kubelet, containerd, runc), with the " + string(o.Profile) + " plane")
		if first, err = cluster.Start(ctx, cluster.Options{Profile: o.Profile, RealNode: true,
			Progress: func(what string) { step("the real node's cluster: " + what) }}); err != nil {
			return err
		}
		stops = append(stops, first.Stop)
		reg = first.Registry
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

	store := &recording.Dir{Root: filepath.Join(o.Dir, "recordings")}
	var anchorer *tlog.Anchorer
	if o.Rekor {
		step("Rekor on Trillian and PostgreSQL")
		if anchorer, err = startRekor(ctx, o.Dir, &stops); err != nil {
			return err
		}
	}
	notes, err := startInbox(filepath.Join(o.Dir, "notifications.jsonl"), logs)
	if err != nil {
		return err
	}
	stops = append(stops, notes.close)

	profiles := []policies.Profile{o.Profile}
	if o.Both {
		profiles = append(profiles, map[policies.Profile]policies.Profile{policies.Flight: policies.Ground, policies.Ground: policies.Flight}[o.Profile])
	}
	var planes []*plane
	for i, p := range profiles {
		pl := &plane{name: string(p), profile: p, dir: filepath.Join(o.Dir, string(p)), relayURL: relayURL}
		if i == 0 {
			pl.c, pl.realNode = first, o.RealNode
		}
		if err := pl.start(ctx, step, &stops, image.String(), reg.Host, keyFile, store, anchorer,
			notifier(notes.URL, portalURL, pl.name), sweepLimits{ReviewWithin: o.ReviewWithin, ApprovedFor: o.ApprovedFor}); err != nil {
			return err
		}
		planes = append(planes, pl)
	}

	step("the OIDC issuer and the relay with its console")
	issuer, err := oidcissuer.Start()
	if err != nil {
		return err
	}
	stops = append(stops, issuer.Close)
	issuer.TokenTTL = o.TokenTTL
	// The console's redirect, and kubectl breakglass login's loopback port.
	issuer.AddClient(relayAudience, relayURL+"/auth/callback", "http://127.0.0.1/callback")
	tokens := map[string]string{}
	for _, p := range People {
		issuer.AddPerson(p.Username, p.Person)
		tok, err := issuer.Token(p.Person, relayAudience, 12*time.Hour)
		if err != nil {
			return err
		}
		file := filepath.Join(o.Dir, p.Username+".token")
		if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
			return err
		}
		tokens[p.Person.Email] = file
	}
	stopRelay, err := startRelay(ctx, relayLn, relayURL, portalURL, planes, o, issuer.URL, notes.URL, store, anchorer, logs)
	if err != nil {
		return err
	}
	stops = append(stops, stopRelay)
	if o.Backstage {
		step("Backstage's backend with Tower's plugins, on PostgreSQL")
		if backstageLog, err = startBackstage(ctx, o.Dir, backstageLn, issuer, relayURL, planes, o.BackstageAllowAll, &stops); err != nil {
			return err
		}
	}

	if o.Ready != nil {
		steps[len(steps)-1].Took = time.Since(begin) - steps[len(steps)-1].At
		info := Info{Kubeconfig: planes[0].kubeconfig, RelayURL: relayURL, Cluster: planes[0].name, Namespace: demoNamespace, Pod: planes[0].pod,
			ConsoleURL: relayURL + "/console/", Notifications: filepath.Join(o.Dir, "notifications.jsonl"),
			DebugImage: image.String(), Tokens: tokens, Started: time.Since(begin), Steps: steps, BackstageURL: backstageURL, BackstageLog: backstageLog,
			IssuerURL: issuer.URL}
		for _, pl := range planes {
			info.Clusters = append(info.Clusters, ClusterInfo{Name: pl.name, Profile: pl.profile, Kubeconfig: pl.kubeconfig, Pod: pl.pod})
		}
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

// startRekor runs the transparency log and writes the keys a reviewer pins
// (the relay's and the log's) beside the recordings.
func startRekor(ctx context.Context, dir string, stops *[]func() error) (*tlog.Anchorer, error) {
	log, err := rekor.Start(ctx)
	if err != nil {
		return nil, err
	}
	*stops = append(*stops, log.Stop)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	anchorer := &tlog.Anchorer{URL: log.URL, Signer: sv}
	pub, err := anchorer.PublicKey()
	if err != nil {
		return nil, err
	}
	logKey, err := log.PublicKey(ctx)
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"relay.pub": pub, "rekor.pub": logKey} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	return anchorer, nil
}

// pushDebugImage pushes the project's debug image (the machine's static
// busybox, as make image builds it for each platform), or, without busybox-static, a
// stand-in: the virtual node runs the machine's own programs either way (a
// real node needs the real image).
func pushDebugImage(reg *registry.Registry, realNode bool) (name.Digest, error) {
	if _, err := os.Stat("/bin/busybox"); err != nil && !realNode {
		return reg.Push("breakglass/debug", "dev")
	}
	img, err := devimage.BuildDebug("/bin/busybox", runtime.GOARCH, time.Unix(0, 0).UTC())
	if err != nil {
		return name.Digest{}, err
	}
	return reg.PushImage("breakglass/debug", "dev", img)
}
