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

// KeepBundle writes an anchor's bundle beside the recording ref names. A
// bundle already there is left as it is (evidence is written once): a
// bundle proves itself against the manifest, whoever wrote it.
func KeepBundle(ctx context.Context, store Store, ref Ref, b *tlog.Bundle, retainUntil time.Time) (string, error) {
	raw, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return "", err
	}
	key := ref.Prefix() + tlog.BundleFile
	if _, err := store.Put(ctx, key, raw, retainUntil); err != nil && !errors.Is(err, ErrExists) {
		return "", err
	}
	return key, nil
}

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
	var b *tlog.Bundle
	if raw, err := f.Store.Get(ctx, prefix+tlog.BundleFile, ""); err == nil {
		// Anchored before the Session could say so.
		b = &tlog.Bundle{}
		if err := json.Unmarshal(raw, b); err != nil {
			return nil, fmt.Errorf("the kept bundle: %w", err)
		}
	} else {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		b, err = f.Anchorer.Anchor(actx, manifest)
		cancel()
		if err != nil {
			return nil, err
		}
		if _, err := KeepBundle(ctx, f.Store, ref, b, time.Now().Add(f.Retention)); err != nil {
			return nil, err
		}
	}
	ev := s.Status.Evidence.DeepCopy()
	ev.AnchorPending, ev.EntryID, ev.LogIndex = false, b.UUID, b.Entry.LogIndex
	ev.URIs = append(ev.URIs, f.URI+prefix+tlog.BundleFile)
	return ev, nil
}
