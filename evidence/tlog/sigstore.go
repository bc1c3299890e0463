package tlog

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/rekor/pkg/tle"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
)

// SigstoreBundleFile is the anchor as a standard Sigstore bundle, beside
// the recording: what `cosign verify-blob --bundle` and sigstore-go read.
const SigstoreBundleFile = "manifest.sigstore.json"

// Sigstore is the anchor as a Sigstore bundle (v0.3): the relay's
// signature of the manifest (a message signature over its SHA-256), the
// key's hint or the signing certificate, and the log's entry with its
// inclusion proof, checkpoint and signed entry timestamp. It is made from
// the same entry as the Bundle, so anchors written before it existed can
// be given one too.
func (b *Bundle) Sigstore(manifest []byte) ([]byte, error) {
	pb, err := messageBundle(&Signed{Manifest: manifest, Signature: b.Signature, PublicKey: b.PublicKey})
	if err != nil {
		return nil, err
	}
	var entry *protorekor.TransparencyLogEntry
	switch e := b.Entry; {
	case b.TlogEntry != nil:
		entry, err = b.v2Entry()
	case e.LogID == nil || e.LogIndex == nil || e.IntegratedTime == nil || e.Verification == nil || e.Verification.InclusionProof == nil ||
		e.Verification.InclusionProof.RootHash == nil || e.Verification.InclusionProof.LogIndex == nil ||
		e.Verification.InclusionProof.TreeSize == nil || e.Verification.InclusionProof.Checkpoint == nil:
		// Every Rekor v1 answer has these; a bundle without them was not
		// one (and rekor's converter would dereference them).
		err = errors.New("the entry lacks its log ID, index, time or inclusion proof")
	default:
		entry, err = tle.GenerateTransparencyLogEntry(e)
	}
	if err != nil {
		return nil, fmt.Errorf("the log's entry: %w", err)
	}
	pb.VerificationMaterial.TlogEntries = []*protorekor.TransparencyLogEntry{entry}
	if _, err := sgbundle.NewBundle(pb); err != nil {
		return nil, fmt.Errorf("not a valid Sigstore bundle: %w", err)
	}
	return protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(pb)
}

// messageBundle is a Sigstore bundle of the signed manifest (a message
// signature over its SHA-256, with the key's hint or the certificate) that
// no log has taken yet.
func messageBundle(signed *Signed) (*protobundle.Bundle, error) {
	material := &protobundle.VerificationMaterial{}
	if certs, err := cryptoutils.UnmarshalCertificatesFromPEM(signed.PublicKey); err == nil && len(certs) > 0 {
		material.Content = &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: certs[0].Raw}}
	} else {
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(signed.PublicKey)
		if err != nil {
			return nil, errors.New("the signer's public key is neither a PEM key nor a certificate")
		}
		der, err := cryptoutils.MarshalPublicKeyToDER(pub)
		if err != nil {
			return nil, err
		}
		hint := sha256.Sum256(der)
		material.Content = &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: base64.StdEncoding.EncodeToString(hint[:])}}
	}
	sum := sha256.Sum256(signed.Manifest)
	return &protobundle.Bundle{
		MediaType:            "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: material,
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum[:]},
			Signature:     signed.Signature,
		}},
	}, nil
}

// VerifySigstore checks a Sigstore bundle of manifest as `cosign
// verify-blob` does, offline, with an entry in Rekor v1 or v2: the signature is the pinned signer's (its key,
// or a certificate for its identity chaining to its roots, valid when the
// log took the entry) and the entry's inclusion proof and signed entry
// timestamp verify with the log's key (PEM, from the reviewer's own
// source). It says who signed.
func VerifySigstore(bundleJSON, manifest, rekorPublicKeyPEM []byte, s Signer) (string, error) {
	var b sgbundle.Bundle
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return "", fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	var material root.TrustedMaterial
	var opts []verify.VerifierOption
	var identity verify.PolicyOption
	switch {
	case s.Key != nil:
		tr, err := TrustedRoot("", rekorPublicKeyPEM, nil, checkpointOrigin(&b))
		if err != nil {
			return "", err
		}
		v, err := signature.LoadVerifier(s.Key, crypto.SHA256)
		if err != nil {
			return "", err
		}
		key := root.NewExpiringKey(v, time.Time{}, time.Time{})
		material = root.TrustedMaterialCollection{tr, root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })}
		opts, identity = []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithNoObserverTimestamps()}, verify.WithKey()
	case s.Keyless != nil && s.RootsPEM == nil:
		return "", errors.New("a pinned identity needs the roots its certificates chain to")
	case s.Keyless != nil:
		tr, err := TrustedRoot("", rekorPublicKeyPEM, s.RootsPEM, checkpointOrigin(&b))
		if err != nil {
			return "", err
		}
		id := s.Keyless.Identities[0]
		ci, err := verify.NewShortCertificateIdentity(id.Issuer, "", id.Subject, id.SubjectRegExp)
		if err != nil {
			return "", err
		}
		material = tr
		opts, identity = []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)}, verify.WithCertificateIdentity(ci)
	default:
		return "", errors.New("no signer is pinned")
	}
	v, err := verify.NewVerifier(material, opts...)
	if err != nil {
		return "", err
	}
	res, err := v.Verify(&b, verify.NewPolicy(verify.WithArtifact(bytes.NewReader(manifest)), identity))
	if err != nil {
		return "", err
	}
	if res.Signature != nil && res.Signature.Certificate != nil {
		return fmt.Sprintf("the certificate of %s from %s", res.Signature.Certificate.SubjectAlternativeName, res.Signature.Certificate.Issuer), nil
	}
	return "the pinned relay key", nil
}
