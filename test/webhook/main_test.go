// Package webhook_test runs the signature webhook over TLS, registered with a
// real kube-apiserver, against a real OCI registry with images signed by
// cosign at test time.
package webhook_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/localplane/tools"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/sigstore-go/pkg/root"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/evidence/tlog"
	"github.com/tower-dev/breakglass/internal/image"
	"github.com/tower-dev/breakglass/localplane/registry"
	"github.com/tower-dev/breakglass/localplane/rekor"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
	"github.com/tower-dev/breakglass/webhook"
)

// The test bed, set up once.
var (
	cl  *cluster.Cluster
	reg *registry.Registry
	// Images, all on the plane's allowlist so that only the webhook decides.
	signed, signedLate, unsigned, wrongKey, otherRepo name.Digest
	good                                              *registry.Signer
	keyFile                                           string
	webhookPort                                       int
	// Keyless: signed by a short-lived certificate, logged in a real Rekor.
	rk                                      *rekor.Log
	keylessGood, keylessOther, keylessKeyed name.Digest
	keylessUntrusted, keylessUnlogged       name.Digest
	keylessRoots, rekorKeyFile              string
	// Signed in the Sigstore bundle format, as cosign v3 does by default:
	// by the good key (logged in Rekor, as cosign does unless told not to),
	// by another key, tampered with after signing, and an attestation that
	// is not a signature.
	bundleSigned, bundleWrongKey, bundleTampered, bundleAttestation name.Digest
	// A signed image, and an unsigned one, with a 2 MiB junk referrer.
	bundleWithJunk, unsignedWithJunk name.Digest
	// Keyless bundles, verified against a Sigstore trusted root file.
	keylessBundleGood, keylessBundleOther, keylessBundleExpired, keylessBundleUnlogged name.Digest
	trustedRootFile                                                                    string
	// Keyless bundles logged in Rekor v2, which gives no time: with a
	// timestamp authority's countersignature, and without.
	rk2                                    *rekor.V2
	tsa                                    *rekor.TSA
	keylessV2Timestamped, keylessV2Untimed name.Digest
	trustedRootV2File                      string
	// Signed by the stock cosign CLI, in both layouts, with its own key.
	cli                  *registry.CLI
	cliBundle, cliLegacy name.Digest
	// A registry that answers only with the pull secret's credentials.
	private       *registry.Registry
	privateSigned name.Digest
	// The debug image as make image builds it: its index (signed by the
	// stock CLI), its linux/arm64 image alone (signed by nobody), and the
	// SBOM attached to the index. Empty when make image has not run.
	debugIndex, debugIndexArm64, debugIndexSBOM name.Digest
)

const (
	keylessIssuer  = "https://issuer.example"
	keylessSubject = "release@example.com"
)

func TestMain(m *testing.M) {
	os.Exit(prereq.Run(m, run, append(append(prereq.ControlPlane, prereq.Cosign), prereq.Rekor...)...))
}

func run(m *testing.M) int {
	log.SetLogger(logr.Discard())
	if err := setUp(); err != nil {
		fmt.Fprintln(os.Stderr, "setting up:", err)
		tearDown()
		return 1
	}
	defer tearDown()
	return m.Run()
}

func tearDown() {
	if cl != nil {
		if err := cl.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	if reg != nil {
		reg.Close()
	}
	if private != nil {
		private.Close()
	}
	if rk != nil {
		if err := rk.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping Rekor:", err)
		}
	}
	if rk2 != nil {
		if err := rk2.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping Rekor v2:", err)
		}
	}
	if tsa != nil {
		tsa.Stop()
	}
	if keyFile != "" {
		_ = os.RemoveAll(filepath.Dir(keyFile))
	}
}

func setUp() error {
	reg = registry.Start()
	var err error
	if good, err = registry.NewSigner(); err != nil {
		return err
	}
	bad, err := registry.NewSigner()
	if err != nil {
		return err
	}
	images := map[*name.Digest]struct {
		repo, tag string
		by        *registry.Signer
	}{
		&signed:     {"breakglass/debug", "signed", good},
		&signedLate: {"breakglass/debug", "signed-late", good},
		&unsigned:   {"breakglass/debug", "unsigned", nil},
		&wrongKey:   {"breakglass/debug", "wrong-key", bad},
		&otherRepo:  {"elsewhere/tools", "signed", good},
	}
	var allow []string
	for ref, img := range images {
		if *ref, err = reg.Push(img.repo, img.tag); err != nil {
			return err
		}
		if img.by != nil {
			if err := img.by.Sign(*ref); err != nil {
				return err
			}
		}
		allow = append(allow, ref.String())
	}
	dir, err := os.MkdirTemp("", "breakglass-webhook-keys")
	if err != nil {
		return err
	}
	if keyFile, err = good.WritePublicKey(dir, "cosign.pub"); err != nil {
		return err
	}
	keyless, err := keylessImages(dir, good)
	if err != nil {
		return err
	}
	allow = append(allow, keyless...)
	bundles, err := bundleImages(dir, good, bad)
	if err != nil {
		return err
	}
	allow = append(allow, bundles...)
	v2, err := rekorV2Images(dir)
	if err != nil {
		return err
	}
	allow = append(allow, v2...)
	indexes, err := indexImages(context.Background())
	if err != nil {
		return err
	}
	allow = append(allow, indexes...)
	private = registry.StartPrivate("puller", "pull-s3cret")
	if privateSigned, err = private.Push("breakglass/debug", "private"); err != nil {
		return err
	}
	if err := good.Sign(privateSigned, ociremote.WithRemoteOptions(remote.WithAuth(private.Auth()))); err != nil {
		return err
	}
	allow = append(allow, privateSigned.String())
	if cl, err = cluster.Start(context.Background(), cluster.Options{Profile: policies.Flight, DebugImages: allow}); err != nil {
		return err
	}
	if webhookPort, err = cluster.FreePort(); err != nil {
		return err
	}
	// The chart's webhook configuration, pointed at a URL: a test has no Service network.
	cfg := manifests.WebhookConfiguration(admissionregistrationv1.WebhookClientConfig{
		URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", webhookPort, webhook.Path)),
	})
	objs := append(manifests.WebhookRoles(), cfg)
	for _, o := range objs {
		if err := cl.Apply(context.Background(), o.(client.Object)); err != nil {
			return err
		}
	}
	return nil
}

// keylessImages starts Rekor and a stand-in for Fulcio, and pushes images
// signed keyless by the trusted identity, by another identity, and with a
// key (no certificate).
func keylessImages(dir string, keyed *registry.Signer) ([]string, error) {
	ctx := context.Background()
	var err error
	if rk, err = rekor.Start(ctx); err != nil {
		return nil, err
	}
	ca, err := registry.NewCA()
	if err != nil {
		return nil, err
	}
	if keylessRoots, err = ca.WriteRoots(dir, "fulcio-roots.pem"); err != nil {
		return nil, err
	}
	logKey, err := rk.PublicKey(ctx)
	if err != nil {
		return nil, err
	}
	rekorKeyFile = filepath.Join(dir, "rekor.pub")
	if err := os.WriteFile(rekorKeyFile, logKey, 0o600); err != nil {
		return nil, err
	}
	untrusted, err := registry.NewCA()
	if err != nil {
		return nil, err
	}
	var allow []string
	for _, img := range []struct {
		ref      *name.Digest
		tag      string
		by       *registry.CA
		subject  string
		rekorURL string
	}{
		{&keylessGood, "good", ca, keylessSubject, rk.URL},
		{&keylessOther, "other", ca, "mallory@example.com", rk.URL},
		{&keylessUntrusted, "untrusted-ca", untrusted, keylessSubject, rk.URL},
		{&keylessUnlogged, "unlogged", ca, keylessSubject, ""},
		{&keylessKeyed, "keyed", nil, "", ""},
	} {
		if *img.ref, err = reg.Push("breakglass-keyless/debug", img.tag); err != nil {
			return nil, err
		}
		if img.by == nil {
			err = keyed.Sign(*img.ref)
		} else {
			err = img.by.SignKeyless(ctx, *img.ref, keylessIssuer, img.subject, img.rekorURL)
		}
		if err != nil {
			return nil, fmt.Errorf("signing %s: %w", img.tag, err)
		}
		allow = append(allow, img.ref.String())
	}
	return allow, nil
}

// bundleImages pushes images signed in the Sigstore bundle format, with a
// key, keyless, and by the stock cosign CLI in both layouts. It runs after
// keylessImages (it uses its Rekor).
func bundleImages(dir string, good, bad *registry.Signer) ([]string, error) {
	ctx := context.Background()
	ca, err := registry.NewCA()
	if err != nil {
		return nil, err
	}
	logKey, err := rk.PublicKey(ctx)
	if err != nil {
		return nil, err
	}
	tr, err := tlog.TrustedRoot(rk.URL, logKey, ca.PEM, "")
	if err != nil {
		return nil, err
	}
	if trustedRootFile, err = writeTrustedRoot(dir, "trusted_root.json", tr); err != nil {
		return nil, err
	}
	cliDir := filepath.Join(dir, "cli")
	if err := os.Mkdir(cliDir, 0o700); err != nil {
		return nil, err
	}
	if cli, err = registry.NewCLI(ctx, filepath.Join(tools.BinDir(), "cosign"), cliDir); err != nil {
		return nil, err
	}
	logged := registry.BundleOptions{RekorURL: rk.URL}
	fresh := time.Now().Add(-time.Minute)
	var allow []string
	for _, img := range []struct {
		ref       *name.Digest
		repo, tag string
		sign      func(name.Digest) error
	}{
		{&bundleSigned, "breakglass/debug", "bundle", func(r name.Digest) error { return good.SignBundle(ctx, r, logged) }},
		{&bundleWrongKey, "breakglass/debug", "bundle-wrong-key", func(r name.Digest) error { return bad.SignBundle(ctx, r, logged) }},
		{&bundleTampered, "breakglass/debug", "bundle-tampered", func(r name.Digest) error {
			return good.SignBundle(ctx, r, registry.BundleOptions{RekorURL: rk.URL, Tamper: true})
		}},
		{&bundleWithJunk, "breakglass/debug", "bundle-junk", func(r name.Digest) error {
			if err := registry.AttachJunk(r, 2<<20); err != nil {
				return err
			}
			return good.SignBundle(ctx, r, logged)
		}},
		{&unsignedWithJunk, "breakglass/debug", "unsigned-junk", func(r name.Digest) error { return registry.AttachJunk(r, 2<<20) }},
		{&bundleAttestation, "breakglass/debug", "bundle-sbom", func(r name.Digest) error {
			return good.SignBundle(ctx, r, registry.BundleOptions{RekorURL: rk.URL, PredicateType: "https://spdx.dev/Document"})
		}},
		{&keylessBundleGood, "breakglass-bundle/debug", "good", func(r name.Digest) error {
			return ca.SignKeylessBundle(ctx, r, keylessIssuer, keylessSubject, fresh, logged)
		}},
		{&keylessBundleOther, "breakglass-bundle/debug", "other", func(r name.Digest) error {
			return ca.SignKeylessBundle(ctx, r, keylessIssuer, "mallory@example.com", fresh, logged)
		}},
		// Its ten minutes ended an hour before the log saw it.
		{&keylessBundleExpired, "breakglass-bundle/debug", "expired", func(r name.Digest) error {
			return ca.SignKeylessBundle(ctx, r, keylessIssuer, keylessSubject, time.Now().Add(-time.Hour), logged)
		}},
		{&keylessBundleUnlogged, "breakglass-bundle/debug", "unlogged", func(r name.Digest) error {
			return ca.SignKeylessBundle(ctx, r, keylessIssuer, keylessSubject, fresh, registry.BundleOptions{})
		}},
		{&cliBundle, "breakglass-cli/debug", "bundle", func(r name.Digest) error { return cli.Sign(ctx, r, false) }},
		{&cliLegacy, "breakglass-cli/debug", "legacy", func(r name.Digest) error { return cli.Sign(ctx, r, true) }},
	} {
		if *img.ref, err = reg.Push(img.repo, img.tag); err != nil {
			return nil, err
		}
		if err := img.sign(*img.ref); err != nil {
			return nil, fmt.Errorf("signing %s:%s: %w", img.repo, img.tag, err)
		}
		allow = append(allow, img.ref.String())
	}
	return allow, nil
}

// rekorV2Images starts Rekor v2 and a timestamp authority and pushes
// images signed keyless in the bundle format, logged in v2, with and
// without a timestamp; it writes the trusted root that names the CA, the
// v2 log and the timestamp authority.
func rekorV2Images(dir string) ([]string, error) {
	ctx := context.Background()
	var err error
	if rk2, err = rekor.StartV2(ctx); err != nil {
		return nil, err
	}
	if tsa, err = rekor.StartTSA(ctx); err != nil {
		return nil, err
	}
	ca, err := registry.NewCA()
	if err != nil {
		return nil, err
	}
	tr, err := tlog.TrustedRoot("", rk2.PublicKey, ca.PEM, rk2.Origin, tsa.Authority())
	if err != nil {
		return nil, err
	}
	if trustedRootV2File, err = writeTrustedRoot(dir, "trusted_root_v2.json", tr); err != nil {
		return nil, err
	}
	var allow []string
	for _, img := range []struct {
		ref *name.Digest
		tag string
		o   registry.BundleOptions
	}{
		{&keylessV2Timestamped, "timestamped", registry.BundleOptions{RekorURL: rk2.URL, RekorV2: true, TSAURL: tsa.URL}},
		{&keylessV2Untimed, "untimed", registry.BundleOptions{RekorURL: rk2.URL, RekorV2: true}},
	} {
		if *img.ref, err = reg.Push("breakglass-v2/debug", img.tag); err != nil {
			return nil, err
		}
		if err := ca.SignKeylessBundle(ctx, *img.ref, keylessIssuer, keylessSubject, time.Now().Add(-time.Minute), img.o); err != nil {
			return nil, fmt.Errorf("signing %s: %w", img.tag, err)
		}
		allow = append(allow, img.ref.String())
	}
	return allow, nil
}

// writeTrustedRoot writes tr as dir/file, as a keyless policy names it.
func writeTrustedRoot(dir, file string, tr *root.TrustedRoot) (string, error) {
	raw, err := tr.MarshalJSON()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, file)
	return path, os.WriteFile(path, raw, 0o600)
}

// indexImages pushes the debug image's index that make image built, with
// its SBOM, and signs the index by digest with the stock cosign CLI; it
// does nothing when make image has not run (TestImageIndexes then says so).
func indexImages(ctx context.Context) ([]string, error) {
	if prereq.Missing(prereq.Images) != nil {
		return nil, nil
	}
	idx, sbom, err := image.FromLayout(filepath.Join(tools.BinDir(), "images"), "breakglass-debug")
	if err != nil {
		return nil, err
	}
	tag, err := name.NewTag(reg.Host+"/breakglass-cli/debug:index", name.Insecure)
	if err != nil {
		return nil, err
	}
	if err := remote.WriteIndex(tag, idx, remote.WithAuth(reg.Auth())); err != nil {
		return nil, err
	}
	sbomDigest, err := sbom.Digest()
	if err != nil {
		return nil, err
	}
	debugIndexSBOM = tag.Context().Digest(sbomDigest.String())
	if err := remote.Write(debugIndexSBOM, sbom, remote.WithAuth(reg.Auth())); err != nil {
		return nil, err
	}
	d, err := idx.Digest()
	if err != nil {
		return nil, err
	}
	debugIndex = tag.Context().Digest(d.String())
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, desc := range m.Manifests {
		if desc.Platform != nil && desc.Platform.Architecture == "arm64" {
			debugIndexArm64 = tag.Context().Digest(desc.Digest.String())
		}
	}
	if err := cli.Sign(ctx, debugIndex, false); err != nil {
		return nil, fmt.Errorf("signing the debug image's index: %w", err)
	}
	return []string{debugIndex.String(), debugIndexArm64.String()}, nil
}
