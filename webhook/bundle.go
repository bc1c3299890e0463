package webhook

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/cosign/v3/pkg/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// errNoBundle: the image has no Sigstore bundle among its referrers.
var errNoBundle = errors.New("no Sigstore bundle attached")

// verifyBundles checks the Sigstore bundles attached to ref as OCI referrers
// (what cosign v3 writes by default): one must verify under the policy's
// trust, name ref's digest as its subject, and be an image signature.
func (t *trust) verifyBundles(ctx context.Context, ref name.Digest, registry []ociremote.Option, nameOpts []name.Option) error {
	bundles, hash, err := cosign.GetBundles(ctx, ref, registry, nameOpts...)
	if none := (*cosign.ErrNoMatchingAttestations)(nil); errors.As(err, &none) {
		return errNoBundle
	}
	if err != nil {
		return fmt.Errorf("reading its referrers: %w", err)
	}
	digest, err := hex.DecodeString(hash.Hex)
	if err != nil {
		return err
	}
	policy := verify.NewPolicy(verify.WithArtifactDigest(hash.Algorithm, digest), t.identity)
	var errs []error
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
