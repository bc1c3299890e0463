package tlog

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sigstore/rekor-tiles/v2/pkg/note"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// RekorLog is a Rekor log as a Sigstore trusted root names it. A v1 log's
// ID is the SHA-256 of its public key (DER), as Rekor computes it; a v2
// log's is its checkpoints' key hash, of its origin (given) and its key,
// and its URL's host must be that origin.
// Verifiers require a start to its validity; the key alone says nothing of
// when it began, so it is trusted for any time (from the Unix epoch).
func RekorLog(baseURL string, publicKeyPEM []byte, origin string) (*root.TransparencyLog, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(publicKeyPEM)
	if err != nil {
		return nil, errors.New("not a PEM public key")
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	id := sum[:]
	if origin != "" {
		if strings.ContainsAny(origin, ":/") {
			return nil, fmt.Errorf("the v2 log's origin %q names a port or a path: verifiers check its checkpoints as signed by a URL's host alone", origin)
		}
		if _, id, err = note.KeyHash(origin, pub); err != nil {
			return nil, err
		}
		// Verifiers check v2 checkpoints as signed by the URL's host.
		if baseURL == "" {
			baseURL = "https://" + origin
		}
	}
	return &root.TransparencyLog{BaseURL: baseURL, ID: id, HashFunc: crypto.SHA256, PublicKey: pub, SignatureHashFunc: crypto.SHA256,
		ValidityPeriodStart: time.Unix(0, 0).UTC()}, nil
}

// TrustedRoot is a Sigstore trusted root (what `cosign verify-blob
// --trusted-root` and sigstore-go read) naming one Rekor log (v2 when its
// checkpoints' origin is given), when caPEM is given one certificate
// authority (its self-signed root and any intermediates), and any
// timestamp authorities.
func TrustedRoot(rekorURL string, rekorPEM, caPEM []byte, origin string, tsas ...root.TimestampingAuthority) (*root.TrustedRoot, error) {
	log, err := RekorLog(rekorURL, rekorPEM, origin)
	if err != nil {
		return nil, fmt.Errorf("the log's key: %w", err)
	}
	var cas []root.CertificateAuthority
	if caPEM != nil {
		certs, err := cryptoutils.UnmarshalCertificatesFromPEM(caPEM)
		if err != nil || len(certs) == 0 {
			return nil, errors.New("the certificate authority's PEM holds no certificate")
		}
		// One authority per self-signed root, each with every intermediate:
		// a chain is built from whichever fit.
		var intermediates []*x509.Certificate
		for _, c := range certs {
			if c.Subject.String() != c.Issuer.String() {
				intermediates = append(intermediates, c)
			}
		}
		for _, c := range certs {
			if c.Subject.String() == c.Issuer.String() {
				cas = append(cas, &root.FulcioCertificateAuthority{Root: c, Intermediates: intermediates})
			}
		}
		if len(cas) == 0 {
			return nil, errors.New("the certificate authority's PEM holds no self-signed root")
		}
	}
	return root.NewTrustedRoot(root.TrustedRootMediaType01, cas, nil, tsas, map[string]*root.TransparencyLog{hex.EncodeToString(log.ID): log})
}
