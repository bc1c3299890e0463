package recording

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/tlog"
)

// SessionFinalizer finalizes the recording of a session whose relay died:
// what was streamed in segments becomes a complete, hashed recording marked
// as ended abnormally. The sweeper uses it.
type SessionFinalizer struct {
	Store Store
	// Cluster is this cluster's name as the relay knows it: part of every
	// recording's key.
	Cluster   string
	Retention time.Duration
	// URI is the store's address, for the Session's evidence record.
	URI string
	// Anchorer, when set, anchors finalized recordings (see Anchor).
	Anchorer *tlog.Anchorer
}

// Finalize assembles s's segments and returns what the Session should record.
func (f *SessionFinalizer) Finalize(ctx context.Context, s *v1alpha1.Session) (*v1alpha1.Evidence, error) {
	ref := RefOf(f.Cluster, s)
	done, err := Finalize(ctx, f.Store, Meta{
		Session: ref, Started: s.CreationTimestamp.Time,
		RetainUntil: time.Now().Add(f.Retention), Abnormal: true,
	})
	if err != nil {
		return nil, err
	}
	return EvidenceOf(ref, done, f.URI, f.Anchorer != nil), nil
}

// EvidenceOf is what a Session records of its finalized recording: where
// it is, the manifest's SHA-256 and version (what a reader checks the
// store's copy against), and the cluster it was recorded on.
func EvidenceOf(ref Ref, f Finalized, uri string, anchorPending bool) *v1alpha1.Evidence {
	sum := sha256.Sum256(f.Body)
	prefix := uri + ref.Prefix()
	files := []string{CastFile, TranscriptFile}
	for i, name := range files {
		if s := f.Manifest.Files[name].Stored; s != "" {
			files[i] = s
		}
	}
	manifest := f.Key
	if manifest == "" {
		manifest = ManifestFile
	}
	return &v1alpha1.Evidence{
		URIs:            []string{prefix + files[0], prefix + files[1], prefix + manifest},
		ManifestSHA256:  hex.EncodeToString(sum[:]),
		ManifestVersion: f.Version,
		Cluster:         ref.Cluster,
		AnchorPending:   anchorPending,
	}
}

// ReadManifest reads the manifest the Session's evidence names, exactly:
// the version it recorded, whose SHA-256 must be the one it recorded, and
// which must name the session. A manifest written over since is reported
// (ErrOverwritten, with the genuine one) but never read in its place.
func ReadManifest(ctx context.Context, store Store, ref Ref, ev *v1alpha1.Evidence) (Manifest, []byte, error) {
	if ev == nil || ev.ManifestSHA256 == "" {
		return Manifest{}, nil, fmt.Errorf("the Session %s names no recording", ref)
	}
	// The usual name, or, if other bytes took it first, the name the
	// Session's hash gives (AltName).
	var key string
	var body []byte
	var err error
	for _, name := range []string{ManifestFile, AltName(ManifestFile, ev.ManifestSHA256)} {
		key = ref.Prefix() + name
		got, gerr := store.Get(ctx, key, ev.ManifestVersion)
		if gerr != nil {
			err = errors.Join(err, gerr)
			continue
		}
		if sum := sha256.Sum256(got); hex.EncodeToString(sum[:]) != ev.ManifestSHA256 {
			err = errors.Join(err, fmt.Errorf("the manifest in the store has SHA-256 %x, the Session names %s: it is not the session's: %w", sum, ev.ManifestSHA256, ErrMismatch))
			continue
		}
		body, err = got, nil
		break
	}
	if body == nil {
		return Manifest{}, nil, err
	}
	m, err := ParseManifest(body)
	if err != nil {
		return Manifest{}, nil, err
	}
	if err := m.Names(ref); err != nil {
		return Manifest{}, nil, fmt.Errorf("%w: %w", err, ErrMismatch)
	}
	return m, body, Overwritten(ctx, store, key, ev.ManifestVersion)
}

// ReadFile reads one file of a recording at the version its manifest
// names, and checks it against the manifest's SHA-256 and size. A file
// written over since is reported (ErrOverwritten, with the genuine bytes).
func ReadFile(ctx context.Context, store Store, ref Ref, m Manifest, name string) ([]byte, error) {
	want, ok := m.Files[name]
	if !ok {
		return nil, fmt.Errorf("the manifest names no %s: %w", name, ErrMismatch)
	}
	key := ref.Prefix() + name
	if want.Stored != "" {
		key = ref.Prefix() + want.Stored
	}
	data, err := store.Get(ctx, key, want.Version)
	if err != nil {
		return nil, err
	}
	if got := digest(data); got.SHA256 != want.SHA256 || got.Size != want.Size {
		return nil, fmt.Errorf("%s in the store has SHA-256 %s (%d bytes), the manifest says %s (%d bytes): %w", name, got.SHA256, got.Size, want.SHA256, want.Size, ErrMismatch)
	}
	return data, Overwritten(ctx, store, key, want.Version)
}

// Overwritten reports ErrOverwritten when key's current version is not the
// one the evidence wrote.
func Overwritten(ctx context.Context, store Store, key, version string) error {
	current, err := store.Current(ctx, key)
	if err != nil {
		return fmt.Errorf("%s: %w (%w)", key, ErrOverwritten, err)
	}
	if current != version {
		return fmt.Errorf("%s: version %s, not %s: %w", key, current, version, ErrOverwritten)
	}
	return nil
}
