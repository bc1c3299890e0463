package main

import (
	"crypto"
	"fmt"
	"os"

	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/tower-dev/breakglass/relay/tlog"
)

// loadAnchorer is the transparency log at url with the signing key in
// keyFile (PEM; its password, if any, in $BREAKGLASS_REKOR_KEY_PASSWORD).
func loadAnchorer(url, keyFile string) (*tlog.Anchorer, error) {
	sv, err := signature.LoadSignerVerifierFromPEMFile(keyFile, crypto.SHA256, func(bool) ([]byte, error) {
		return []byte(os.Getenv("BREAKGLASS_REKOR_KEY_PASSWORD")), nil
	})
	if err != nil {
		return nil, fmt.Errorf("the transparency log's signing key %s: %w", keyFile, err)
	}
	return &tlog.Anchorer{URL: url, Signer: sv}, nil
}
