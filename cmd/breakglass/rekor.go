package main

import (
	"context"
	"fmt"
	"os"

	sigs "github.com/sigstore/cosign/v3/pkg/signature"

	"github.com/tower-dev/breakglass/evidence/tlog"
)

// loadAnchorer is the transparency log at url with the relay's signing key:
// a PEM file (its password, if any, in $BREAKGLASS_REKOR_KEY_PASSWORD), a
// KMS URI (awskms://, gcpkms://, azurekms://, hashivault://) or a
// k8s://namespace/secret, as cosign reads them.
func loadAnchorer(ctx context.Context, url, keyRef, certFile string) (*tlog.Anchorer, error) {
	sv, err := sigs.SignerVerifierFromKeyRef(ctx, keyRef, func(bool) ([]byte, error) {
		return []byte(os.Getenv("BREAKGLASS_REKOR_KEY_PASSWORD")), nil
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("the transparency log's signing key %s: %w", keyRef, err)
	}
	a := &tlog.Anchorer{URL: url, Signer: sv}
	if certFile != "" {
		if a.Certificate, err = os.ReadFile(certFile); err != nil {
			return nil, fmt.Errorf("the signing certificate: %w", err)
		}
		if _, err := a.PublicKey(); err != nil {
			return nil, fmt.Errorf("the signing certificate %s: %w", certFile, err)
		}
	}
	return a, nil
}
