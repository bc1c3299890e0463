package tlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/rekor/pkg/generated/models"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"google.golang.org/protobuf/encoding/protojson"
)

// Rekor v2 (rekor-tiles) is a tile-based log: it takes hashedrekord
// entries and answers with the entry, its inclusion proof and a signed
// checkpoint, but gives no signed entry timestamp, no time and no UUID (an
// anchor's entry is named by its proven index, v2-<index>), and does not
// serve its public key (the operator pins it).

// submitV2 writes the signed manifest to a Rekor v2 log through
// sigstore-go's client, and verifies the entry it answers with.
func (a *Anchorer) submitV2(ctx context.Context, signed *Signed) (*Bundle, error) {
	if a.LogKey == nil {
		return nil, errors.New("rekor v2: the log's public key is required (it does not serve it)")
	}
	if certs, err := cryptoutils.UnmarshalCertificatesFromPEM(signed.PublicKey); err == nil && len(certs) > 0 {
		// A certificate is checked at a trusted time: v2 gives none, so a
		// timestamp authority would have to, and the relay uses none.
		return nil, errors.New("rekor v2: a relay signing with a certificate needs a trusted time the log does not give; sign with a key, or use Rekor v1")
	}
	pb, err := messageBundle(signed)
	if err != nil {
		return nil, err
	}
	log := sign.NewRekor(&sign.RekorOptions{BaseURL: a.URL, Version: 2, Timeout: 10 * time.Second})
	if err := log.GetTransparencyLogEntry(ctx, signed.PublicKey, pb); err != nil {
		return nil, fmt.Errorf("writing to the transparency log: %w", err)
	}
	entry := pb.GetVerificationMaterial().GetTlogEntries()[0]
	raw, err := protojson.Marshal(entry)
	if err != nil {
		return nil, err
	}
	index := entry.GetLogIndex()
	b := &Bundle{RekorURL: a.URL, UUID: v2EntryID(entry), Signature: signed.Signature, PublicKey: signed.PublicKey,
		Entry: models.LogEntryAnon{LogIndex: &index}, RekorPublicKey: a.LogKey, TlogEntry: raw}
	if err := b.Verify(ctx, signed.Manifest, a.LogKey); err != nil {
		return nil, fmt.Errorf("the log's answer does not verify: %w", err)
	}
	return b, nil
}

// v2EntryID names a v2 entry by its index in the log, which its inclusion
// proof proves. (Its body is not what verifiers check: they rebuild the
// leaf from the signature, key and digest, so a name taken from the body
// would be the bundle's word only.)
func v2EntryID(e *protorekor.TransparencyLogEntry) string {
	return "v2-" + strconv.FormatInt(e.GetInclusionProof().GetLogIndex(), 10)
}

// v2Entry is the bundle's Rekor v2 entry.
func (b *Bundle) v2Entry() (*protorekor.TransparencyLogEntry, error) {
	var e protorekor.TransparencyLogEntry
	if err := protojson.Unmarshal(b.TlogEntry, &e); err != nil {
		return nil, fmt.Errorf("the log's entry: %w", err)
	}
	if e.GetInclusionProof().GetCheckpoint() == nil {
		return nil, errors.New("the log's entry has no inclusion proof")
	}
	proven := e.GetInclusionProof().GetLogIndex()
	if e.GetLogIndex() != proven || b.Entry.LogIndex == nil || *b.Entry.LogIndex != proven || b.UUID != v2EntryID(&e) {
		return nil, errors.New("the bundle names another entry than the one its inclusion proof proves")
	}
	return &e, nil
}

// verifyV2 checks a v2 anchor as a Sigstore bundle, pinned to s.
func (b *Bundle) verifyV2(manifest, rekorPublicKeyPEM []byte, s Signer) (string, error) {
	raw, err := b.Sigstore(manifest)
	if err != nil {
		return "", err
	}
	return VerifySigstore(raw, manifest, rekorPublicKeyPEM, s)
}

// checkpointOrigin is the origin line of the bundle's v2 checkpoint: with
// the log's key it makes the log's ID in a trusted root. It is taken from
// the bundle, which is safe: the checkpoint's signature over it is checked
// with the pinned key.
func checkpointOrigin(b *sgbundle.Bundle) string {
	for _, e := range b.GetVerificationMaterial().GetTlogEntries() {
		if e.GetIntegratedTime() == 0 {
			origin, _, _ := strings.Cut(e.GetInclusionProof().GetCheckpoint().GetEnvelope(), "\n")
			return origin
		}
	}
	return ""
}
