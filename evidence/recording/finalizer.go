package recording

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/tlog"
)

// Prefix is where a session's evidence lives in the store.
func Prefix(namespace, name string) string { return "sessions/" + namespace + "/" + name + "/" }

// SessionFinalizer finalizes the recording of a session whose relay died:
// what was streamed in segments becomes a complete, hashed recording marked
// as ended abnormally. The sweeper uses it.
type SessionFinalizer struct {
	Store     Store
	Retention time.Duration
	// URI is the store's address, for the Session's evidence record.
	URI string
	// Anchorer, when set, anchors finalized recordings (see Anchor).
	Anchorer *tlog.Anchorer
}

// Finalize assembles s's segments and returns what the Session should record.
func (f *SessionFinalizer) Finalize(ctx context.Context, s *v1alpha1.Session) (*v1alpha1.Evidence, error) {
	prefix := Prefix(s.Namespace, s.Name)
	_, body, err := Finalize(ctx, f.Store, prefix, Meta{
		Session: s.Namespace + "/" + s.Name, Started: s.CreationTimestamp.Time,
		RetainUntil: time.Now().Add(f.Retention), Abnormal: true,
	})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	return &v1alpha1.Evidence{
		URIs:           []string{f.URI + prefix + CastFile, f.URI + prefix + TranscriptFile, f.URI + prefix + ManifestFile},
		ManifestSHA256: hex.EncodeToString(sum[:]),
		AnchorPending:  f.Anchorer != nil,
	}, nil
}
