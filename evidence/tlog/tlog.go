// Package tlog anchors a recording in Rekor: a hashedrekord entry for the
// manifest's SHA-256, signed with the relay's key. The entry, its inclusion
// proof, checkpoint and signed entry timestamp are kept beside the
// recording as a bundle, so anyone holding the recording, the bundle and
// Rekor's public key can check it without the portal, offline.
package tlog

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sigstore/rekor/pkg/client"
	"github.com/sigstore/rekor/pkg/generated/client/entries"
	"github.com/sigstore/rekor/pkg/generated/client/pubkey"
	"github.com/sigstore/rekor/pkg/generated/models"
	"github.com/sigstore/rekor/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"k8s.io/utils/ptr"
)

// BundleFile is the bundle's name beside the recording.
const BundleFile = "rekor-bundle.json"

// Bundle is the proof that a manifest was anchored.
type Bundle struct {
	RekorURL string `json:"rekorURL"`
	UUID     string `json:"uuid"`
	// Signature is the relay's signature of the manifest; PublicKey (PEM)
	// verifies it.
	Signature []byte `json:"signature"`
	PublicKey []byte `json:"publicKey"`
	// Entry is Rekor's entry: body, integrated time, log id and index, and
	// verification (inclusion proof with checkpoint, signed entry timestamp).
	Entry models.LogEntryAnon `json:"entry"`
	// RekorPublicKey (PEM) is the log's key as it was when anchored: a
	// verifier should take it from a trusted source instead.
	RekorPublicKey []byte `json:"rekorPublicKey"`
	// TlogEntry is the entry in a Rekor v2 log (a Sigstore
	// TransparencyLogEntry as JSON: body, inclusion proof and signed
	// checkpoint); Entry then holds only its index, and UUID its leaf hash.
	TlogEntry json.RawMessage `json:"tlogEntry,omitempty"`
}

// Anchorer writes entries to one Rekor.
type Anchorer struct {
	URL    string
	Signer signature.SignerVerifier
	// Certificate (PEM), when set, is the signing key's certificate naming
	// the relay's identity: the log's entry carries it instead of the bare
	// key, so a reviewer can pin an identity (issuer and subject) instead of
	// a key.
	Certificate []byte
	// Backoff is the first wait between attempts (doubling, at most a minute).
	Backoff time.Duration
	// Version is the log's API: 1 (Rekor v1, the default) or 2 (Rekor v2,
	// tile-based).
	Version int
	// LogKey (PEM) is the log's public key, pinned by the operator: required
	// for Rekor v2, which does not serve it; for v1 it is used instead of
	// asking the log.
	LogKey []byte
}

// Signed is a manifest with the relay's signature: what goes to the log.
// Retries submit the same Signed, so an entry whose answer was lost is
// found (409), never written twice.
type Signed struct {
	Manifest  []byte
	Signature []byte
	PublicKey []byte // PEM
}

// Sign signs manifest with the relay's key.
func (a *Anchorer) Sign(manifest []byte) (*Signed, error) {
	sig, err := a.Signer.SignMessage(bytes.NewReader(manifest))
	if err != nil {
		return nil, fmt.Errorf("signing the manifest: %w", err)
	}
	pubPEM, err := a.PublicKey()
	if err != nil {
		return nil, err
	}
	return &Signed{Manifest: manifest, Signature: sig, PublicKey: pubPEM}, nil
}

// PublicKey is what verifies the relay's signatures (PEM): its certificate
// when it has one, else its public key. The relay publishes it.
func (a *Anchorer) PublicKey() ([]byte, error) {
	pub, err := a.Signer.PublicKey()
	if err != nil {
		return nil, err
	}
	if a.Certificate != nil {
		certs, err := cryptoutils.UnmarshalCertificatesFromPEM(a.Certificate)
		if err != nil || len(certs) == 0 {
			return nil, errors.New("the signing certificate is not PEM")
		}
		if err := cryptoutils.EqualKeys(certs[0].PublicKey, pub); err != nil {
			return nil, errors.New("the signing certificate is for another key than the relay's")
		}
		return cryptoutils.MarshalCertificateToPEM(certs[0])
	}
	return cryptoutils.MarshalPublicKeyToPEM(pub)
}

// Anchor signs manifest and submits it.
func (a *Anchorer) Anchor(ctx context.Context, manifest []byte) (*Bundle, error) {
	signed, err := a.Sign(manifest)
	if err != nil {
		return nil, err
	}
	return a.Submit(ctx, signed)
}

// Submit puts the signed manifest's digest in the log, verifies the entry
// Rekor answers with, and returns the bundle. An entry already there is
// fetched, not duplicated.
func (a *Anchorer) Submit(ctx context.Context, signed *Signed) (*Bundle, error) {
	if a.Version == 2 {
		return a.submitV2(ctx, signed)
	}
	rc, err := client.GetRekorClient(a.URL, client.WithRetryCount(0))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(signed.Manifest)
	entry := &models.Hashedrekord{APIVersion: ptr.To("0.0.1"), Spec: models.HashedrekordV001Schema{
		Data: &models.HashedrekordV001SchemaData{Hash: &models.HashedrekordV001SchemaDataHash{
			Algorithm: ptr.To[string](models.HashedrekordV001SchemaDataHashAlgorithmSha256), Value: ptr.To(hex.EncodeToString(sum[:]))}},
		Signature: &models.HashedrekordV001SchemaSignature{Content: signed.Signature,
			PublicKey: &models.HashedrekordV001SchemaSignaturePublicKey{Content: signed.PublicKey}},
	}}
	var uuid string
	var anon models.LogEntryAnon
	created, err := rc.Entries.CreateLogEntryContext(ctx, entries.NewCreateLogEntryParams().WithProposedEntry(entry))
	var exists *entries.CreateLogEntryConflict
	switch {
	case errors.As(err, &exists):
		loc := exists.Location.String()
		uuid = loc[strings.LastIndex(loc, "/")+1:]
		got, err := rc.Entries.GetLogEntryByUUIDContext(ctx, entries.NewGetLogEntryByUUIDParams().WithEntryUUID(uuid))
		if err != nil {
			return nil, fmt.Errorf("fetching the entry already in the log: %w", err)
		}
		uuid, anon, err = only(got.Payload)
		if err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("writing to the transparency log: %w", err)
	default:
		if uuid, anon, err = only(created.Payload); err != nil {
			return nil, err
		}
	}
	logKey, err := a.LogPublicKey(ctx)
	if err != nil {
		return nil, err
	}
	b := &Bundle{RekorURL: a.URL, UUID: uuid, Signature: signed.Signature, PublicKey: signed.PublicKey, Entry: anon, RekorPublicKey: logKey}
	if err := b.Verify(ctx, signed.Manifest, b.RekorPublicKey); err != nil {
		return nil, fmt.Errorf("the log's answer does not verify: %w", err)
	}
	return b, nil
}

// LogPublicKey is the log's public key (PEM), as the log at a.URL gives it.
func (a *Anchorer) LogPublicKey(ctx context.Context) ([]byte, error) {
	if a.LogKey != nil {
		return a.LogKey, nil
	}
	rc, err := client.GetRekorClient(a.URL, client.WithRetryCount(0))
	if err != nil {
		return nil, err
	}
	keyResp, err := rc.Pubkey.GetPublicKeyContext(ctx, pubkey.NewGetPublicKeyParams())
	if err != nil {
		return nil, fmt.Errorf("the log's public key: %w", err)
	}
	return []byte(keyResp.Payload), nil
}

func only(e models.LogEntry) (string, models.LogEntryAnon, error) {
	for uuid, anon := range e {
		return uuid, anon, nil
	}
	return "", models.LogEntryAnon{}, errors.New("the log answered without an entry")
}

// AnchorWithRetry anchors until it succeeds or ctx ends, waiting a doubling
// backoff between attempts and telling pending about each failure: a log
// that is down delays the anchor; nothing is dropped.
func (a *Anchorer) AnchorWithRetry(ctx context.Context, manifest []byte, pending func(error)) (*Bundle, error) {
	signed, err := a.Sign(manifest)
	if err != nil {
		return nil, err
	}
	wait := a.Backoff
	if wait <= 0 {
		wait = time.Second
	}
	for {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		b, err := a.Submit(actx, signed)
		cancel()
		if err == nil {
			return b, nil
		}
		if pending != nil {
			pending(err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("not anchored: %w (last error: %w)", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
}

// Verify checks the bundle against manifest without the network: the
// entry's body names the manifest's SHA-256 and a signature, the signature
// verifies with the body's key, and the inclusion proof, checkpoint and
// signed entry timestamp verify with the log's key (PEM). It proves nothing
// about who signed: VerifySigned pins that.
func (b *Bundle) Verify(ctx context.Context, manifest, rekorPublicKeyPEM []byte) error {
	if b.TlogEntry != nil {
		pub, err := publicKeyOf(b.PublicKey)
		if err != nil {
			return fmt.Errorf("the bundle's public key: %w", err)
		}
		_, err = b.verifyV2(manifest, rekorPublicKeyPEM, Signer{Key: pub})
		return err
	}
	sum := sha256.Sum256(manifest)
	hr, err := b.hashedrekord()
	if err != nil {
		return err
	}
	if hr.Data == nil || hr.Data.Hash == nil || hr.Data.Hash.Value == nil || *hr.Data.Hash.Value != hex.EncodeToString(sum[:]) {
		return errors.New("the log's entry is for another manifest: its SHA-256 differs")
	}
	pub, err := publicKeyOf(hr.Signature.PublicKey.Content)
	if err != nil {
		return fmt.Errorf("the entry's public key: %w", err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return err
	}
	if err := v.VerifySignature(bytes.NewReader(hr.Signature.Content), bytes.NewReader(manifest)); err != nil {
		return fmt.Errorf("the manifest's signature in the log does not verify: %w", err)
	}
	logKey, err := cryptoutils.UnmarshalPEMToPublicKey(rekorPublicKeyPEM)
	if err != nil {
		return fmt.Errorf("the log's public key: %w", err)
	}
	lv, err := signature.LoadVerifier(logKey, crypto.SHA256)
	if err != nil {
		return err
	}
	entry := b.Entry
	if err := verify.VerifyLogEntry(ctx, &entry, lv); err != nil {
		return fmt.Errorf("the inclusion proof, checkpoint or timestamp does not verify: %w", err)
	}
	return nil
}

// publicKeyOf reads a PEM public key, or the key of a PEM certificate (a
// keyless signer's).
func publicKeyOf(pemBytes []byte) (crypto.PublicKey, error) {
	if certs, err := cryptoutils.UnmarshalCertificatesFromPEM(pemBytes); err == nil && len(certs) > 0 {
		return certs[0].PublicKey, nil
	}
	return cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
}
