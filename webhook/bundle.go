package webhook

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v3/pkg/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// errNoBundle: the image has no Sigstore bundle among its referrers.
var errNoBundle = errors.New("no Sigstore bundle attached")

// Bounds on what an image's referrers may make the webhook read: a bundle
// is a few KiB, and anyone who can push to the repository can attach
// referrers (a decompression bomb, thousands of them) to keep every debug
// container waiting or the webhook out of memory.
const (
	maxBundles     = 16
	maxBundleBytes = 1 << 20
)

// bundleArtifactType is how cosign v3 marks a Sigstore bundle referrer.
const bundleArtifactType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// verifyBundles checks the Sigstore bundles attached to ref as OCI referrers
// (what cosign v3 writes by default): one must verify under the policy's
// trust, name ref's digest as its subject, and be an image signature.
func (t *trust) verifyBundles(ref name.Digest, registry []remote.Option) error {
	bundles, errs := fetchBundles(ref, registry)
	if len(bundles) == 0 && len(errs) == 0 {
		return errNoBundle
	}
	digest, err := hex.DecodeString(strings.TrimPrefix(ref.DigestStr(), "sha256:"))
	if err != nil {
		return err
	}
	policy := verify.NewPolicy(verify.WithArtifactDigest("sha256", digest), t.identity)
	for i, b := range bundles {
		if _, err := t.bundles.Verify(b, policy); err != nil {
			errs = append(errs, fmt.Errorf("bundle %d: %w", i+1, err))
			continue
		}
		if err := isImageSignature(b); err != nil {
			errs = append(errs, fmt.Errorf("bundle %d: %w", i+1, err))
			continue
		}
		return nil
	}
	return errors.Join(errs...)
}

// fetchBundles reads up to maxBundles Sigstore bundles referring to ref,
// each at most maxBundleBytes as stored (never decompressed), and says why
// any it found could not be read.
func fetchBundles(ref name.Digest, registry []remote.Option) ([]*sgbundle.Bundle, []error) {
	index, err := remote.Referrers(ref, append(registry, remote.WithFilter("artifactType", bundleArtifactType))...)
	if err != nil {
		return nil, []error{fmt.Errorf("reading its referrers: %w", err)}
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return nil, []error{fmt.Errorf("reading its referrers: %w", err)}
	}
	var bundles []*sgbundle.Bundle
	var errs []error
	for i, d := range manifest.Manifests {
		if d.ArtifactType != bundleArtifactType {
			continue
		}
		if len(bundles)+len(errs) == maxBundles {
			errs = append(errs, fmt.Errorf("more than %d bundles: the rest were not read", maxBundles))
			break
		}
		b, err := fetchBundle(ref.Context().Digest(d.Digest.String()), registry)
		if err != nil {
			errs = append(errs, fmt.Errorf("referrer %d (%s): %w", i+1, d.Digest, err))
			continue
		}
		bundles = append(bundles, b)
	}
	return bundles, errs
}

// fetchBundle reads the one layer of a bundle referrer.
func fetchBundle(ref name.Digest, registry []remote.Option) (*sgbundle.Bundle, error) {
	img, err := remote.Image(ref, registry...)
	if err != nil {
		return nil, err
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	if len(m.Layers) != 1 || !strings.HasPrefix(string(m.Layers[0].MediaType), "application/vnd.dev.sigstore.bundle") {
		return nil, errors.New("not a Sigstore bundle: one layer of a bundle media type expected")
	}
	if m.Layers[0].Size > maxBundleBytes {
		return nil, fmt.Errorf("a bundle of %d bytes: more than %d", m.Layers[0].Size, maxBundleBytes)
	}
	layer, err := img.LayerByDigest(m.Layers[0].Digest)
	if err != nil {
		return nil, err
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, maxBundleBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxBundleBytes {
		return nil, fmt.Errorf("a bundle of more than %d bytes", maxBundleBytes)
	}
	b := &sgbundle.Bundle{Bundle: new(protobundle.Bundle)}
	if err := b.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	return b, nil
}

// isImageSignature: the bundle is what `cosign sign` makes, an in-toto
// statement with cosign's signature predicate. Any other attestation by the
// same key or identity (an SBOM, a scan result) says something about the
// image, not that it was signed for running.
func isImageSignature(b *sgbundle.Bundle) error {
	env, ok := b.Content.(*protobundle.Bundle_DsseEnvelope)
	if !ok {
		return errors.New("not an image signature: it holds no in-toto statement")
	}
	var statement struct {
		PredicateType string `json:"predicateType"`
	}
	if err := json.Unmarshal(env.DsseEnvelope.GetPayload(), &statement); err != nil {
		return fmt.Errorf("not an image signature: its statement: %w", err)
	}
	if statement.PredicateType != types.CosignSignPredicateType {
		return fmt.Errorf("not an image signature: an attestation of %q, not %q", statement.PredicateType, types.CosignSignPredicateType)
	}
	return nil
}
