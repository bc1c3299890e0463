package registry

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	intotov1 "github.com/in-toto/attestation/go/v1"
	cbundle "github.com/sigstore/cosign/v3/pkg/cosign/bundle"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/cosign/v3/pkg/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	prototrustroot "github.com/sigstore/protobuf-specs/gen/pb-go/trustroot/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// BundleOptions say how a test signs in the Sigstore bundle format.
type BundleOptions struct {
	// RekorURL logs the signature in that Rekor (v1, or v2 with RekorV2)
	// and puts the entry in the bundle; empty signs without logging.
	RekorURL string
	RekorV2  bool
	// TSAURL has that timestamp authority countersign the signature (what a
	// certificate logged in Rekor v2, which gives no time, needs).
	TSAURL string
	// PredicateType is the statement's predicate: cosign's signature
	// predicate unless set (another makes an attestation, not a signature).
	PredicateType string
	// Tamper changes the signed statement after signing.
	Tamper bool
	// Remote reaches the registry (e.g. its credentials).
	Remote []ociremote.Option
}

// SignBundle signs ref as cosign v3's `cosign sign --key` does by default:
// an in-toto statement naming ref's digest with cosign's signature
// predicate, in a DSSE envelope, as a Sigstore bundle attached to ref as an
// OCI referrer. It runs cosign's own signing (cosign/v3/pkg/cosign/bundle).
func (s *Signer) SignBundle(ctx context.Context, ref name.Digest, o BundleOptions) error {
	return signBundle(ctx, ref, s.key, nil, o)
}

// SignKeylessBundle is SignBundle with a fresh key and a certificate for
// (issuer, subject) valid for ten minutes from notBefore, as `cosign sign`
// does with a Fulcio certificate.
func (ca *CA) SignKeylessBundle(ctx context.Context, ref name.Digest, issuer, subject string, notBefore time.Time, o BundleOptions) error {
	key, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return err
	}
	cert, err := ca.Issue(key.GetPublicKey(), issuer, subject, notBefore, 10*time.Minute)
	if err != nil {
		return err
	}
	return signBundle(ctx, ref, key, cert, o)
}

func signBundle(ctx context.Context, ref name.Digest, key sign.Keypair, certPEM []byte, o BundleOptions) error {
	predicate := o.PredicateType
	if predicate == "" {
		predicate = types.CosignSignPredicateType
	}
	algorithm, hex, _ := strings.Cut(ref.DigestStr(), ":")
	statement, err := protojson.Marshal(&intotov1.Statement{
		Type:          intotov1.StatementTypeUri,
		Subject:       []*intotov1.ResourceDescriptor{{Digest: map[string]string{algorithm: hex}}},
		PredicateType: predicate,
		Predicate:     &structpb.Struct{},
	})
	if err != nil {
		return err
	}
	var logs, tsas []root.Service
	if o.RekorURL != "" {
		version := uint32(1)
		if o.RekorV2 {
			version = 2
		}
		logs = append(logs, root.Service{URL: o.RekorURL, MajorAPIVersion: version, ValidityPeriodStart: time.Now().Add(-time.Hour)})
	}
	if o.TSAURL != "" {
		tsas = append(tsas, root.Service{URL: o.TSAURL, MajorAPIVersion: 1, ValidityPeriodStart: time.Now().Add(-time.Hour)})
	}
	any := root.ServiceConfiguration{Selector: prototrustroot.ServiceSelector_ANY}
	config, err := root.NewSigningConfig(root.SigningConfigMediaType02, nil, nil, logs, any, tsas, any)
	if err != nil {
		return err
	}
	b, err := cbundle.SignData(ctx, &sign.DSSEData{Data: statement, PayloadType: "application/vnd.in-toto+json"},
		key, "", certPEM, nil, config, nil, cbundle.SignOptions{})
	if err != nil {
		return err
	}
	if o.Tamper {
		if b, err = tamper(b); err != nil {
			return err
		}
	}
	return ociremote.WriteAttestationNewBundleFormat(ref, b, predicate, o.Remote...)
}

// tamper adds a claim to the signed statement, leaving the signature.
func tamper(bundleJSON []byte) ([]byte, error) {
	var b protobundle.Bundle
	if err := protojson.Unmarshal(bundleJSON, &b); err != nil {
		return nil, err
	}
	env := b.GetDsseEnvelope()
	var statement map[string]any
	if err := json.Unmarshal(env.Payload, &statement); err != nil {
		return nil, err
	}
	statement["predicate"] = map[string]any{"approvedBy": "mallory"}
	payload, err := json.Marshal(statement)
	if err != nil {
		return nil, err
	}
	env.Payload = payload
	return protojson.Marshal(&b)
}

// AttachJunk attaches size bytes that are no bundle as a bundle referrer of
// ref: what someone who can push, but does not hold the key, can add.
func AttachJunk(ref name.Digest, size int, opts ...ociremote.Option) error {
	junk := []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","junk":"` + strings.Repeat("x", size) + `"}`)
	return ociremote.WriteAttestationNewBundleFormat(ref, junk, types.CosignSignPredicateType, opts...)
}
