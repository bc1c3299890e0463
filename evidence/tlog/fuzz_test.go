package tlog

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// FuzzBundle: a bundle handed to a reviewer beside a recording never
// verifies without the log's signature over its entry, whatever it says:
// the manifest's hash, a good signature by any key, any proof. (Nobody
// here holds the log's private key.)
func FuzzBundle(f *testing.F) {
	manifest := []byte(`{"version":2,"files":{"recording.cast":{"sha256":"00","size":1}}}`)
	logPEM := unheldLogKey(f)
	// A seed that gets as far as the log's proof: the right hash, signed by
	// a key of the forger's own.
	forger, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(forger, crypto.SHA256)
	if err != nil {
		f.Fatal(err)
	}
	sig, err := sv.SignMessage(bytes.NewReader(manifest))
	if err != nil {
		f.Fatal(err)
	}
	forgerPEM, _ := cryptoutils.MarshalPublicKeyToPEM(&forger.PublicKey)
	sum := sha256.Sum256(manifest)
	body, _ := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": map[string]any{
		"data":      map[string]any{"hash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(sum[:])}},
		"signature": map[string]any{"content": sig, "publicKey": map[string]any{"content": forgerPEM}},
	}})
	for _, entry := range []map[string]any{
		{"body": base64.StdEncoding.EncodeToString(body), "integratedTime": 1700000000, "logID": "c0ffee", "logIndex": 7},
		{"body": base64.StdEncoding.EncodeToString(body), "integratedTime": 1700000000, "logID": "c0ffee", "logIndex": 7,
			"verification": map[string]any{"signedEntryTimestamp": base64.StdEncoding.EncodeToString([]byte("sig")),
				"inclusionProof": map[string]any{"logIndex": 7, "rootHash": hex.EncodeToString(sum[:]), "treeSize": 8, "hashes": []string{}, "checkpoint": "x"}}},
		{"body": "not base64"},
		{},
	} {
		b, _ := json.Marshal(map[string]any{"uuid": "ab", "signature": sig, "publicKey": forgerPEM, "entry": entry})
		f.Add(b)
	}
	// The Rekor v2 form: the entry as a Sigstore TransparencyLogEntry.
	v2, _ := json.Marshal(map[string]any{"uuid": "v2-7", "signature": sig, "publicKey": forgerPEM, "entry": map[string]any{"logIndex": 7},
		"tlogEntry": map[string]any{"logIndex": "7", "logId": map[string]any{"keyId": "wP/u"}, "kindVersion": map[string]any{"kind": "hashedrekord", "version": "0.0.2"},
			"inclusionProof": map[string]any{"logIndex": "7", "rootHash": base64.StdEncoding.EncodeToString(sum[:]), "treeSize": "8",
				"checkpoint": map[string]any{"envelope": "rekor.example\n8\nAAAA\n\n\u2014 rekor.example AAAA\n"}},
			"canonicalizedBody": base64.StdEncoding.EncodeToString(body)}})
	f.Add(v2)
	f.Fuzz(func(t *testing.T, raw []byte) {
		var b Bundle
		if json.Unmarshal(raw, &b) != nil {
			return
		}
		if err := b.Verify(context.Background(), manifest, logPEM); err == nil {
			t.Fatalf("a bundle verified without the log's key: %s", raw)
		}
		if _, err := b.VerifySigned(context.Background(), manifest, logPEM, Signer{Key: &forger.PublicKey}); err == nil {
			t.Fatalf("a bundle verified (pinned to a key) without the log's key: %s", raw)
		}
		// recording bundle converts whatever it is handed: an error, never a panic.
		_, _ = b.Sigstore(manifest)
	})
}

// FuzzSigstoreBundle: a Sigstore bundle handed to a reviewer never
// verifies without the log's signature, whatever it holds, and never
// panics. The seed is a real anchor (testdata) checked against a log key
// nobody here holds the private half of.
func FuzzSigstoreBundle(f *testing.F) {
	genuine, manifest := fixture(f)
	seed, err := genuine.Sigstore(manifest)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))
	relayKey, err := cryptoutils.UnmarshalPEMToPublicKey(genuine.PublicKey)
	if err != nil {
		f.Fatal(err)
	}
	logPEM := unheldLogKey(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, err := VerifySigstore(raw, manifest, logPEM, Signer{Key: relayKey}); err == nil {
			t.Fatalf("a Sigstore bundle verified without the log's key: %s", raw)
		}
	})
}

// unheldLogKey is a log's public key (PEM) whose private half is thrown
// away: nothing can be signed by it.
func unheldLogKey(tb testing.TB) []byte {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	pemBytes, err := cryptoutils.MarshalPublicKeyToPEM(&key.PublicKey)
	if err != nil {
		tb.Fatal(err)
	}
	return pemBytes
}
