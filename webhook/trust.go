package webhook

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sigstore/cosign/v3/pkg/cosign"
	sigs "github.com/sigstore/cosign/v3/pkg/signature"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/tower-dev/breakglass/evidence/tlog"
)

// trust is how one policy verifies, in both layouts: CheckOpts for the
// older .sig tag (cosign's own checks), and a sigstore-go verifier and
// policy for bundles.
type trust struct {
	legacy   cosign.CheckOpts
	bundles  *verify.Verifier
	identity verify.PolicyOption
}

// keyTrust checks signatures against the key alone: no log or timestamp is
// needed to know the key signed (the key is the trust, and it does not
// expire the way a ten-minute certificate does).
func keyTrust(ctx context.Context, keyRef string) (*trust, error) {
	pk, err := sigs.PublicKeyFromKeyRef(ctx, keyRef)
	if err != nil {
		return nil, fmt.Errorf("loading its key: %w", err)
	}
	key := root.NewExpiringKey(pk, time.Time{}, time.Time{})
	material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
	v, err := verify.NewVerifier(material, verify.WithNoObserverTimestamps())
	if err != nil {
		return nil, err
	}
	return &trust{legacy: cosign.CheckOpts{SigVerifier: pk, IgnoreTlog: true, IgnoreSCT: true}, bundles: v, identity: verify.WithKey()}, nil
}

// keylessTrust: the certificate chains to a trusted authority and names the
// identity; the signature is in a trusted transparency log; a trusted time
// (the log's integrated time, or a timestamp authority's for Rekor v2) falls
// within the certificate's ten minutes; and, where the trusted root names a
// certificate-transparency log, the certificate carries its SCT. The
// webhook looks nothing up online: the log's entry and proofs travel with
// the signature.
func keylessTrust(k *Keyless) (*trust, error) {
	material, err := loadTrustedRoot(k)
	if err != nil {
		return nil, err
	}
	opts := []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)}
	requireSCT := len(material.CTLogs()) > 0
	if requireSCT {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	v, err := verify.NewVerifier(material, opts...)
	if err != nil {
		return nil, err
	}
	id, err := verify.NewShortCertificateIdentity(k.Issuer, "", k.Subject, k.SubjectRegExp)
	if err != nil {
		return nil, fmt.Errorf("keyless: %w", err)
	}
	return &trust{
		legacy: cosign.CheckOpts{TrustedMaterial: material, IgnoreSCT: !requireSCT,
			Identities: []cosign.Identity{{Issuer: k.Issuer, Subject: k.Subject, SubjectRegExp: k.SubjectRegExp}}},
		bundles:  v,
		identity: verify.WithCertificateIdentity(id),
	}, nil
}

// loadTrustedRoot reads the trusted root file, or makes one of the older
// PEM pair: one certificate authority and one Rekor v1 log.
func loadTrustedRoot(k *Keyless) (*root.TrustedRoot, error) {
	if k.TrustedRoot != "" {
		tr, err := root.NewTrustedRootFromPath(k.TrustedRoot)
		if err != nil {
			return nil, fmt.Errorf("keyless.trustedRoot: %s: %w", k.TrustedRoot, err)
		}
		if len(tr.FulcioCertificateAuthorities()) == 0 || len(tr.RekorLogs()) == 0 {
			return nil, fmt.Errorf("keyless.trustedRoot: %s names no certificate authority or no transparency log: nothing could be verified with it", k.TrustedRoot)
		}
		return tr, nil
	}
	rootsPEM, err := os.ReadFile(k.Roots)
	if err != nil {
		return nil, fmt.Errorf("keyless.roots: %w", err)
	}
	rekorPEM, err := os.ReadFile(k.RekorPublicKey)
	if err != nil {
		return nil, fmt.Errorf("keyless.rekorPublicKey: %w", err)
	}
	tr, err := tlog.TrustedRoot("", rekorPEM, rootsPEM, "")
	if err != nil {
		return nil, fmt.Errorf("keyless.roots and rekorPublicKey (%s, %s): %w", k.Roots, k.RekorPublicKey, err)
	}
	return tr, nil
}
