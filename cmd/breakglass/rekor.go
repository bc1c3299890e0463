package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	sigs "github.com/sigstore/cosign/v3/pkg/signature"

	"github.com/tower-dev/breakglass/evidence/tlog"
)

// logConfig is the transparency log to anchor in, and how to sign for it.
type logConfig struct {
	url, keyRef, certFile string
	// version is the log's API (1 or 2); logKeyFile pins its key (PEM).
	version    int
	logKeyFile string
}

// loadAnchorer is the transparency log with the relay's signing key: a PEM
// file (its password, if any, in $BREAKGLASS_REKOR_KEY_PASSWORD), a KMS URI
// (awskms://, gcpkms://, azurekms://, hashivault://) or a
// k8s://namespace/secret, as cosign reads them.
func loadAnchorer(ctx context.Context, c logConfig) (*tlog.Anchorer, error) {
	url, keyRef, certFile := c.url, c.keyRef, c.certFile
	if c.version != 0 && c.version != 1 && c.version != 2 {
		return nil, fmt.Errorf("the transparency log's API version %d: 1 (Rekor v1) or 2 (Rekor v2)", c.version)
	}
	sv, err := sigs.SignerVerifierFromKeyRef(ctx, keyRef, func(bool) ([]byte, error) {
		return []byte(os.Getenv("BREAKGLASS_REKOR_KEY_PASSWORD")), nil
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("the transparency log's signing key %s: %w", keyRef, err)
	}
	a := &tlog.Anchorer{URL: url, Signer: sv, Version: c.version}
	if c.logKeyFile != "" {
		if a.LogKey, err = os.ReadFile(c.logKeyFile); err != nil {
			return nil, fmt.Errorf("the transparency log's public key: %w", err)
		}
	}
	if c.version == 2 && (a.LogKey == nil || certFile != "") {
		return nil, errors.New("rekor v2: pin the log's public key, and sign with a key alone (v2 gives no trusted time to check a certificate at)")
	}
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
