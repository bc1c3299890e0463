package tlog

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sigstore/cosign/v3/pkg/cosign"
	sigs "github.com/sigstore/cosign/v3/pkg/signature"
	"github.com/sigstore/rekor/pkg/generated/models"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Signer is who must have signed a manifest, pinned by the one who checks
// from a source of their own, never taken from the bundle under check: a
// forger re-signs with a key of their own and anchors anew, and every check
// that reads the key from the bundle passes.
type Signer struct {
	// Key is the relay's public key.
	Key crypto.PublicKey
	// Keyless is a certificate identity instead: the certificate in the
	// log's entry must chain to the roots and name the issuer and subject,
	// and the log must have taken the entry while the certificate was valid.
	Keyless *cosign.CheckOpts
	// RootsPEM are Keyless's roots as PEM, for checks that take a trusted
	// root (Sigstore bundles).
	RootsPEM []byte
}

// KeySigner pins the relay's public key, read as cosign reads a key
// reference: a PEM file, k8s://namespace/secret (its cosign.pub), or a KMS
// URI whose provider is built in.
func KeySigner(ctx context.Context, ref string) (Signer, error) {
	v, err := sigs.PublicKeyFromKeyRef(ctx, ref)
	if err != nil {
		return Signer{}, fmt.Errorf("the relay's public key %s: %w", ref, err)
	}
	pub, err := v.PublicKey()
	if err != nil {
		return Signer{}, err
	}
	return Signer{Key: pub}, nil
}

// KeylessSigner pins a certificate identity: roots (PEM, the CA that
// issues the relay's signing certificates and its intermediates), the OIDC
// issuer, and the subject or a regular expression for it.
func KeylessSigner(rootsPEM []byte, issuer, subject, subjectRegExp string) (Signer, error) {
	if issuer == "" || (subject == "") == (subjectRegExp == "") {
		return Signer{}, errors.New("a keyless identity is an issuer and exactly one of a subject or a subject pattern")
	}
	roots, intermediates, err := CertPools(rootsPEM)
	if err != nil {
		return Signer{}, err
	}
	return Signer{Keyless: &cosign.CheckOpts{RootCerts: roots, IntermediateCerts: intermediates, IgnoreSCT: true,
		Identities: []cosign.Identity{{Issuer: issuer, Subject: subject, SubjectRegExp: subjectRegExp}}}, RootsPEM: rootsPEM}, nil
}

// CertPools splits PEM certificates into self-signed roots and intermediates.
func CertPools(pemBytes []byte) (roots, intermediates *x509.CertPool, err error) {
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM(pemBytes)
	if err != nil || len(certs) == 0 {
		return nil, nil, errors.New("the roots hold no PEM certificate")
	}
	roots, intermediates = x509.NewCertPool(), x509.NewCertPool()
	for _, c := range certs {
		if c.Subject.String() == c.Issuer.String() {
			roots.AddCert(c)
		} else {
			intermediates.AddCert(c)
		}
	}
	return roots, intermediates, nil
}

// VerifySigned is Verify, and then that the manifest's signature in the
// log is the pinned signer's. It says who signed.
func (b *Bundle) VerifySigned(ctx context.Context, manifest, rekorPublicKeyPEM []byte, s Signer) (string, error) {
	if b.TlogEntry != nil {
		return b.verifyV2(manifest, rekorPublicKeyPEM, s)
	}
	if err := b.Verify(ctx, manifest, rekorPublicKeyPEM); err != nil {
		return "", err
	}
	hr, err := b.hashedrekord()
	if err != nil {
		return "", err
	}
	// Verify checked the signature with the entry's key: it remains to pin that key.
	content := hr.Signature.PublicKey.Content
	switch {
	case s.Key != nil:
		pub, err := publicKeyOf(content)
		if err != nil {
			return "", err
		}
		if err := cryptoutils.EqualKeys(s.Key, pub); err != nil {
			return "", errors.New("the manifest was signed by another key than the relay's you pinned")
		}
		return "the pinned relay key", nil
	case s.Keyless != nil:
		certs, err := cryptoutils.UnmarshalCertificatesFromPEM(content)
		if err != nil || len(certs) == 0 {
			return "", errors.New("the manifest was signed with a key, not a certificate: it names no identity")
		}
		cert := certs[0]
		if _, err := cosign.ValidateAndUnpackCert(cert, s.Keyless); err != nil {
			return "", fmt.Errorf("the signing certificate: %w", err)
		}
		if b.Entry.IntegratedTime == nil {
			return "", errors.New("the log's entry has no time: the certificate's validity cannot be checked")
		}
		at := time.Unix(*b.Entry.IntegratedTime, 0)
		if at.Before(cert.NotBefore) || at.After(cert.NotAfter) {
			return "", fmt.Errorf("the log took the entry at %s, outside the certificate's validity (%s to %s)",
				at.UTC().Format(time.RFC3339), cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339))
		}
		return fmt.Sprintf("the certificate of %s from %s", identityOf(cert), s.Keyless.Identities[0].Issuer), nil
	}
	return "", errors.New("no signer is pinned")
}

func identityOf(cert *x509.Certificate) string {
	for _, u := range cert.URIs {
		return u.String()
	}
	for _, e := range cert.EmailAddresses {
		return e
	}
	return cert.Subject.String()
}

// hashedrekord is the entry's body: the manifest's hash, the signature and
// the key or certificate that made it.
func (b *Bundle) hashedrekord() (*models.HashedrekordV001Schema, error) {
	raw, ok := b.Entry.Body.(string)
	if !ok {
		return nil, errors.New("the entry has no body")
	}
	body, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, fmt.Errorf("the entry's body: %w", err)
	}
	var rec models.Hashedrekord
	if err := json.Unmarshal(body, &rec); err != nil {
		return nil, fmt.Errorf("the entry's body: %w", err)
	}
	spec, err := json.Marshal(rec.Spec)
	if err != nil {
		return nil, err
	}
	var hr models.HashedrekordV001Schema
	if err := json.Unmarshal(spec, &hr); err != nil {
		return nil, fmt.Errorf("the entry is not a hashedrekord: %w", err)
	}
	if hr.Signature == nil || hr.Signature.PublicKey == nil {
		return nil, errors.New("the log's entry has no signature")
	}
	return &hr, nil
}
