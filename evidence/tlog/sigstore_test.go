package tlog

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// fixture is a real anchor: a manifest signed with a key made for it and
// logged in a real Rekor (localplane/rekor), kept with the log's key.
func fixture(t testing.TB) (*Bundle, []byte) {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + BundleFile)
	if err != nil {
		t.Fatal(err)
	}
	var b Bundle
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile("testdata/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	return &b, manifest
}

// TestSigstoreBundle: the anchor as a Sigstore bundle verifies offline with
// the pinned key and the log's key, and with nothing else: another key,
// another log, another manifest or another signature is refused.
func TestSigstoreBundle(t *testing.T) {
	b, manifest := fixture(t)
	sb, err := b.Sigstore(manifest)
	if err != nil {
		t.Fatal(err)
	}
	relayKey, err := cryptoutils.UnmarshalPEMToPublicKey(b.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	who, err := VerifySigstore(sb, manifest, b.RekorPublicKey, Signer{Key: relayKey})
	if err != nil || who != "the pinned relay key" {
		t.Fatalf("the genuine bundle: %q, %v", who, err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherPEM, err := cryptoutils.MarshalPublicKeyToPEM(&other.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), manifest...)
	flipped[len(flipped)/2] ^= 1
	var forged map[string]any
	if err := json.Unmarshal(sb, &forged); err != nil {
		t.Fatal(err)
	}
	forged["messageSignature"].(map[string]any)["signature"] = "MEUCIQDcEw7JFRp7aXwlJ3gkjG6dfGLdcVpJv+zH3nBqGfZmPgIgLbW6KE1u7rJ5cM6JY7kS0QM7lP2b4dF1gD1sQDhY2wU="
	forgedJSON, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what                   string
		bundle, manifest, logK []byte
		signer                 Signer
		want                   string
	}{
		{"another key pinned", sb, manifest, b.RekorPublicKey, Signer{Key: &other.PublicKey}, "transparency log certificate does not match"},
		{"another log's key", sb, manifest, otherPEM, Signer{Key: relayKey}, "not enough verified log entries"},
		{"another manifest", sb, flipped, b.RekorPublicKey, Signer{Key: relayKey}, "failed to verify signature"},
		{"another signature", forgedJSON, manifest, b.RekorPublicKey, Signer{Key: relayKey}, "transparency log signature does not match"},
		{"no signer", sb, manifest, b.RekorPublicKey, Signer{}, "no signer is pinned"},
		{"not a bundle", []byte(`{"mediaType":"text/plain"}`), manifest, b.RekorPublicKey, Signer{Key: relayKey}, "not a Sigstore bundle"},
	} {
		_, err := VerifySigstore(tc.bundle, tc.manifest, tc.logK, tc.signer)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.what, err, tc.want)
		}
	}
}

// TestSigstoreOfAnIncompleteBundle: a rekor-bundle.json without its proof
// (handed to recording bundle) is refused with a message, never a panic.
func TestSigstoreOfAnIncompleteBundle(t *testing.T) {
	b, manifest := fixture(t)
	b.Entry.Verification = nil
	if _, err := b.Sigstore(manifest); err == nil || !strings.Contains(err.Error(), "lacks its log ID, index, time or inclusion proof") {
		t.Fatalf("an entry without its proof: %v", err)
	}
}
