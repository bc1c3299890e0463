package recording

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/tlog"
)

// KeepBundle writes an anchor's bundle beside the recording ref names,
// with the same anchor as a standard Sigstore bundle of manifest
// (manifest.sigstore.json, for cosign verify-blob), and returns the
// bundle's key. Evidence is written once: when another file already holds
// the name (written by someone with the store's keys before the relay
// could), this one is kept beside it under a name of its own
// (rekor-bundle-<entry>.json, manifest.sigstore-<entry>.json), and a
// verifier pinned to the relay's key finds the one that verifies.
func KeepBundle(ctx context.Context, store Store, ref Ref, b *tlog.Bundle, manifest []byte, retainUntil time.Time) (string, error) {
	raw, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return "", err
	}
	sigstore, err := b.Sigstore(manifest)
	if err != nil {
		return "", err
	}
	if _, err := keepOnce(ctx, store, ref.Prefix(), tlog.SigstoreBundleFile, AltSigstoreBundleName(b.UUID), sigstore, retainUntil); err != nil {
		return "", err
	}
	return keepOnce(ctx, store, ref.Prefix(), tlog.BundleFile, AltBundleName(b.UUID), raw, retainUntil)
}

// keepOnce is putFinal, content with objects under both names: those are
// for the verifier to pass over, and nothing would get this one written.
func keepOnce(ctx context.Context, store Store, prefix, name, alt string, raw []byte, retainUntil time.Time) (string, error) {
	used, _, err := putFinal(ctx, store, prefix, name, alt, raw, retainUntil)
	if errors.Is(err, ErrExists) {
		return prefix + alt, nil
	}
	return prefix + used, err
}

// AltBundleName is where a bundle is kept when rekor-bundle.json is taken.
func AltBundleName(uuid string) string { return AltName(tlog.BundleFile, lastOf(uuid)) }

// AltSigstoreBundleName is where a Sigstore bundle is kept when
// manifest.sigstore.json is taken.
func AltSigstoreBundleName(uuid string) string { return AltName(tlog.SigstoreBundleFile, lastOf(uuid)) }

// lastOf is the end of an entry's UUID: the tree's own part, after the
// shard's.
func lastOf(uuid string) string { return uuid[max(0, len(uuid)-16):] }

// Anchor anchors a finalized recording whose anchor is pending (its relay
// died, or stopped before the log answered): one attempt; the sweeper
// tries again later on failure. It returns the Session's evidence with the
// entry named.
func (f *SessionFinalizer) Anchor(ctx context.Context, s *v1alpha1.Session) (*v1alpha1.Evidence, error) {
	if f.Anchorer == nil {
		return nil, errors.New("no transparency log is configured")
	}
	ref := RefOf(f.Cluster, s)
	prefix := ref.Prefix()
	// Only the manifest the Session names is anchored, never one written
	// over it.
	_, manifest, err := ReadManifest(ctx, f.Store, ref, s.Status.Evidence)
	if err != nil && !errors.Is(err, ErrOverwritten) {
		return nil, fmt.Errorf("the manifest to anchor: %w", err)
	}
	key := prefix + tlog.BundleFile
	b, err := f.keptBundle(ctx, key, manifest)
	if err != nil {
		// None kept, or one that is not this manifest's by this relay: anchor anew.
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		b, err = f.Anchorer.Anchor(actx, manifest)
		cancel()
		if err != nil {
			return nil, err
		}
		if key, err = KeepBundle(ctx, f.Store, ref, b, manifest, time.Now().Add(f.Retention)); err != nil {
			return nil, err
		}
	}
	ev := s.Status.Evidence.DeepCopy()
	ev.AnchorPending, ev.EntryID, ev.LogIndex = false, b.UUID, b.Entry.LogIndex
	ev.URIs = append(ev.URIs, f.URI+key)
	return ev, nil
}

// keptBundle is the bundle already beside the recording (anchored before
// the Session could say so), only if it anchors this manifest with this
// relay's own key in the log the relay uses: one planted there is never
// taken on trust.
func (f *SessionFinalizer) keptBundle(ctx context.Context, key string, manifest []byte) (*tlog.Bundle, error) {
	raw, err := f.Store.Get(ctx, key, "")
	if err != nil {
		return nil, err
	}
	b := &tlog.Bundle{}
	if err := json.Unmarshal(raw, b); err != nil {
		return nil, fmt.Errorf("the kept bundle: %w", err)
	}
	pub, err := f.Anchorer.Signer.PublicKey()
	if err != nil {
		return nil, err
	}
	logKey, err := f.Anchorer.LogPublicKey(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := b.VerifySigned(ctx, manifest, logKey, tlog.Signer{Key: pub}); err != nil {
		return nil, fmt.Errorf("the kept bundle is not this relay's anchor of this manifest: %w", err)
	}
	return b, nil
}
