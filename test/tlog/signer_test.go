package tlog_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/tower-dev/breakglass/evidence/tlog"
	"github.com/tower-dev/breakglass/localplane/registry"
)

const (
	relayIssuer   = "https://kubernetes.default.svc"
	relayIdentity = "https://kubernetes.io/namespaces/breakglass-system/serviceaccounts/breakglass-portal"
)

// writePublicKey writes sv's public key as PEM, as the relay publishes it.
func writePublicKey(t testing.TB, sv signature.SignerVerifier) string {
	t.Helper()
	pub, err := sv.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	return tempFile(t, "relay.pub", pemBytes)
}

// TestPinnedSigner: a bundle verifies only with the signer its verifier
// pins, never with the key the bundle carries. A forger who re-signs a
// manifest with a key of their own and anchors it anew in the same log
// passes every check that reads the key from the bundle, and fails the
// pinned one; the same holds for a certificate identity.
func TestPinnedSigner(t *testing.T) {
	ctx := context.Background()
	relay, forger := anchorer(t), anchorer(t)
	m := manifest(7)
	genuine, err := relay.Anchor(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := forger.Anchor(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := forged.Verify(ctx, m, forged.RekorPublicKey); err != nil {
		t.Fatalf("the forged bundle should pass the unpinned check (what this test guards against): %v", err)
	}
	pinned, err := tlog.KeySigner(ctx, writePublicKey(t, relay.Signer))
	if err != nil {
		t.Fatal(err)
	}
	if who, err := genuine.VerifySigned(ctx, m, genuine.RekorPublicKey, pinned); err != nil || who != "the pinned relay key" {
		t.Fatalf("the genuine bundle with the relay's key: %q, %v", who, err)
	}
	if _, err := forged.VerifySigned(ctx, m, forged.RekorPublicKey, pinned); err == nil || !strings.Contains(err.Error(), "signed by another key") {
		t.Fatalf("a manifest re-signed by another key and anchored anew: %v", err)
	}

	t.Run("keyless identity", func(t *testing.T) {
		ca, err := registry.NewCA()
		if err != nil {
			t.Fatal(err)
		}
		pub, err := relay.Signer.PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		cert, err := ca.Issue(pub, relayIssuer, relayIdentity, time.Now().Add(-time.Minute), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		withCert := &tlog.Anchorer{URL: log.URL, Signer: relay.Signer, Certificate: cert}
		b, err := withCert.Anchor(ctx, manifest(8))
		if err != nil {
			t.Fatal(err)
		}
		identity, err := tlog.KeylessSigner(ca.PEM, relayIssuer, relayIdentity, "")
		if err != nil {
			t.Fatal(err)
		}
		if who, err := b.VerifySigned(ctx, manifest(8), b.RekorPublicKey, identity); err != nil || !strings.Contains(who, relayIdentity) {
			t.Fatalf("the relay's certificate identity: %q, %v", who, err)
		}
		other, _ := tlog.KeylessSigner(ca.PEM, relayIssuer, "https://kubernetes.io/namespaces/x/serviceaccounts/forger", "")
		if _, err := b.VerifySigned(ctx, manifest(8), b.RekorPublicKey, other); err == nil {
			t.Fatal("another identity verified")
		}
		otherCA, err := registry.NewCA()
		if err != nil {
			t.Fatal(err)
		}
		untrusted, _ := tlog.KeylessSigner(otherCA.PEM, relayIssuer, relayIdentity, "")
		if _, err := b.VerifySigned(ctx, manifest(8), b.RekorPublicKey, untrusted); err == nil {
			t.Fatal("a certificate from an untrusted CA verified")
		}
		if _, err := genuine.VerifySigned(ctx, m, genuine.RekorPublicKey, identity); err == nil || !strings.Contains(err.Error(), "names no identity") {
			t.Fatalf("a key-signed manifest against an identity: %v", err)
		}
		// A certificate that expired before the log took the entry (issued
		// within the root's validity, which began an hour ago).
		old, err := ca.Issue(pub, relayIssuer, relayIdentity, time.Now().Add(-50*time.Minute), 40*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		late, err := (&tlog.Anchorer{URL: log.URL, Signer: relay.Signer, Certificate: old}).Anchor(ctx, manifest(9))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := late.VerifySigned(ctx, manifest(9), late.RekorPublicKey, identity); err == nil || !strings.Contains(err.Error(), "outside the certificate's validity") {
			t.Fatalf("signed after the certificate expired: %v", err)
		}
		// The same as standard Sigstore bundles, checked by sigstore-go and
		// by the stock cosign CLI pinned to the identity.
		sb, err := b.Sigstore(manifest(8))
		if err != nil {
			t.Fatal(err)
		}
		if who, err := tlog.VerifySigstore(sb, manifest(8), b.RekorPublicKey, identity); err != nil || !strings.Contains(who, relayIdentity) {
			t.Fatalf("the Sigstore bundle with the relay's identity: %q, %v", who, err)
		}
		if _, err := tlog.VerifySigstore(sb, manifest(8), b.RekorPublicKey, other); err == nil {
			t.Fatal("the Sigstore bundle verified with another identity")
		}
		// The relay's CA logs no certificate in a CT log: no SCT to check.
		pinIdentity := func(subject string) []string {
			return []string{"--certificate-identity", subject, "--certificate-oidc-issuer", relayIssuer, "--insecure-ignore-sct"}
		}
		if out, err := cosignVerifyBlob(t, v1Log(t), manifest(8), sb, ca.PEM, pinIdentity(relayIdentity)...); err != nil {
			t.Fatalf("cosign verify-blob with the relay's identity: %v\n%s", err, out)
		}
		if out, err := cosignVerifyBlob(t, v1Log(t), manifest(8), sb, ca.PEM, pinIdentity("https://kubernetes.io/namespaces/x/serviceaccounts/forger")...); err == nil {
			t.Fatalf("cosign verify-blob passed another identity:\n%s", out)
		}
		lateSB, err := late.Sigstore(manifest(9))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tlog.VerifySigstore(lateSB, manifest(9), late.RekorPublicKey, identity); err == nil || !strings.Contains(err.Error(), "integrated time outside certificate validity") {
			t.Fatalf("the Sigstore bundle signed after the certificate expired: %v", err)
		}
		if out, err := cosignVerifyBlob(t, v1Log(t), manifest(9), lateSB, ca.PEM, pinIdentity(relayIdentity)...); err == nil {
			t.Fatalf("cosign verify-blob passed a certificate that expired before the log took the entry:\n%s", out)
		}
		if _, err := (&tlog.Anchorer{URL: log.URL, Signer: forger.Signer, Certificate: cert}).PublicKey(); err == nil {
			t.Fatal("a certificate for another key was accepted by the anchorer")
		}
	})
}
