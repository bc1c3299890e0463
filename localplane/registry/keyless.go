package registry

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	cbundle "github.com/sigstore/cosign/v3/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v3/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/cosign/v3/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/tower-dev/breakglass/evidence/tlog"
)

// issuerOID is Fulcio's certificate extension naming the OIDC issuer of
// the signer's identity (1.3.6.1.4.1.57264.1.1, a raw string).
var issuerOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}

// CA stands in for Fulcio: a root that issues short-lived code-signing
// certificates for OIDC identities.
type CA struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	// PEM is the root certificate.
	PEM []byte
}

// NewCA makes a root.
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "breakglass test fulcio"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pem, err := cryptoutils.MarshalCertificateToPEM(cert)
	if err != nil {
		return nil, err
	}
	return &CA{key: key, cert: cert, PEM: pem}, nil
}

// WriteRoots writes the root as PEM into dir/file.
func (ca *CA) WriteRoots(dir, file string) (string, error) {
	path := filepath.Join(dir, file)
	return path, os.WriteFile(path, ca.PEM, 0o600)
}

// Issue makes a code-signing certificate (PEM) for pub naming subject (an
// email address, or a URI such as a ServiceAccount's) from issuer, valid
// for validity from notBefore.
func (ca *CA) Issue(pub crypto.PublicKey, issuer, subject string, notBefore time.Time, validity time.Duration) ([]byte, error) {
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()),
		NotBefore: notBefore, NotAfter: notBefore.Add(validity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		ExtraExtensions: []pkix.Extension{{Id: issuerOID, Value: []byte(issuer)}}}
	if u, err := url.Parse(subject); err == nil && u.Scheme != "" {
		tmpl.URIs = []*url.URL{u}
	} else {
		tmpl.EmailAddresses = []string{subject}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return cryptoutils.MarshalCertificateToPEM(cert)
}

// SignKeyless signs ref as `cosign sign` does without a key: a fresh key, a
// ten-minute certificate for (issuer, subject), the signature logged in
// Rekor at rekorURL, and the log's entry carried with the signature. An
// empty rekorURL signs without logging (what a verifier must refuse).
func (ca *CA) SignKeyless(ctx context.Context, ref name.Digest, issuer, subject, rekorURL string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	certPEM, err := ca.Issue(key.Public(), issuer, subject, time.Now().Add(-time.Minute), 11*time.Minute)
	if err != nil {
		return err
	}
	body, err := (&payload.Cosign{Image: ref}).MarshalJSON()
	if err != nil {
		return err
	}
	digest := sha256.Sum256(body)
	sig, err := key.Sign(rand.Reader, digest[:], crypto.SHA256)
	if err != nil {
		return err
	}
	opts := []static.Option{static.WithCertChain(certPEM, ca.PEM)}
	if rekorURL != "" {
		logged, err := (&tlog.Anchorer{URL: rekorURL}).Submit(ctx, &tlog.Signed{Manifest: body, Signature: sig, PublicKey: certPEM})
		if err != nil {
			return err
		}
		e := logged.Entry
		opts = append(opts, static.WithBundle(&cbundle.RekorBundle{
			SignedEntryTimestamp: e.Verification.SignedEntryTimestamp,
			Payload:              cbundle.RekorPayload{Body: e.Body, IntegratedTime: *e.IntegratedTime, LogIndex: *e.LogIndex, LogID: *e.LogID},
		}))
	}
	ociSig, err := static.NewSignature(body, base64.StdEncoding.EncodeToString(sig), opts...)
	if err != nil {
		return err
	}
	se, err := ociremote.SignedEntity(ref)
	if err != nil {
		return err
	}
	signed, err := mutate.AttachSignatureToEntity(se, ociSig)
	if err != nil {
		return err
	}
	return ociremote.WriteSignatures(ref.Repository, signed)
}
