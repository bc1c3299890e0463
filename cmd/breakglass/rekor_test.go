package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sigstore/cosign/v3/pkg/cosign"
)

// TestLoadAnchorer: a cosign key file with its password in the environment
// signs; a wrong password is refused with the key named.
func TestLoadAnchorer(t *testing.T) {
	keys, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte("s3cret"), nil })
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "relay.key")
	if err := os.WriteFile(path, keys.PrivateBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BREAKGLASS_REKOR_KEY_PASSWORD", "s3cret")
	a, err := loadAnchorer(context.Background(), logConfig{url: "http://127.0.0.1:1", keyRef: path})
	if err != nil {
		t.Fatal(err)
	}
	sig, err := a.Signer.SignMessage(bytes.NewReader([]byte("manifest")))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Signer.VerifySignature(bytes.NewReader(sig), bytes.NewReader([]byte("manifest"))); err != nil {
		t.Fatal(err)
	}
	if _, err := loadAnchorer(context.Background(), logConfig{url: "http://127.0.0.1:1", keyRef: path, version: 3}); err == nil {
		t.Fatal("an anchorer for a Rekor API version 3")
	}
	// Rekor v2 does not serve its key: without a pinned one, no anchorer.
	if _, err := loadAnchorer(context.Background(), logConfig{url: "http://127.0.0.1:1", keyRef: path, version: 2}); err == nil {
		t.Fatal("a Rekor v2 anchorer without the log's key")
	}
	logKey := filepath.Join(t.TempDir(), "rekor.pub")
	if err := os.WriteFile(logKey, keys.PublicBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	v2, err := loadAnchorer(context.Background(), logConfig{url: "http://127.0.0.1:1", keyRef: path, version: 2, logKeyFile: logKey})
	if err != nil || v2.Version != 2 || !bytes.Equal(v2.LogKey, keys.PublicBytes) {
		t.Fatalf("a Rekor v2 anchorer: %+v, %v", v2, err)
	}
	t.Setenv("BREAKGLASS_REKOR_KEY_PASSWORD", "wrong")
	if _, err := loadAnchorer(context.Background(), logConfig{url: "http://127.0.0.1:1", keyRef: path}); err == nil {
		t.Fatal("a wrong password loaded the key")
	}
}
