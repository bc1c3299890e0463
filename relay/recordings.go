package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/relay/api"
)

// recordingFiles are what may be fetched, by the name the API uses.
var recordingFiles = map[string]struct{ key, contentType string }{
	"cast":       {recording.CastFile, "application/x-asciicast"},
	"transcript": {recording.TranscriptFile, "application/octet-stream"},
	"manifest":   {recording.ManifestFile, "application/json"},
}

// recording serves an ended session's evidence to whoever may play it
// (mayPlay). Every play is audited.
func (s *Server) recording(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	file := r.URL.Query().Get("file")
	if file == "" {
		file = "cast"
	}
	f, ok := recordingFiles[file]
	if !ok {
		return api.BadRequest("file: %q is not one of cast, transcript, manifest", file)
	}
	t, sess, err := s.playable(r, c)
	if err != nil {
		return err
	}
	body, err := s.readRecording(r.Context(), w.Header(), t, c, sess, f.key)
	if err != nil {
		return err
	}
	if err := t.Lifecycle.Note(r.Context(), v1alpha1.StepPlay, c.Name, sess, file); err != nil {
		return err
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("Content-Disposition", "attachment; filename="+f.key)
	api.Headers(w.Header())
	_, _ = w.Write(body)
	return nil
}

// playable is the session the request names, if c may play its recording.
func (s *Server) playable(r *http.Request, c api.Caller) (*api.Cluster, *v1alpha1.Session, error) {
	t, sess, err := s.sessions.SessionFor(r, c, "")
	if err != nil {
		return nil, nil, err
	}
	if err := s.sessions.StandingOf(c, t, sess).MayPlay(sess); err != nil {
		return nil, nil, err
	}
	return t, sess, nil
}

// readRecording reads one file (key) of sess's recording, exactly what the
// Session names: the manifest of this cluster's Session with this UID, at
// the version and hash the Session recorded, and the file at the version
// and hash the manifest names. Anything written over them since is
// audited and reported, in a Breakglass-Warning header in h, never served.
func (s *Server) readRecording(ctx context.Context, h http.Header, t *api.Cluster, c api.Caller, sess *v1alpha1.Session, key string) ([]byte, error) {
	ref := recording.RefOf(t.Name, sess)
	m, manifest, err := recording.ReadManifest(ctx, s.store, ref, sess.Status.Evidence)
	body := manifest
	if key != recording.ManifestFile && (err == nil || errors.Is(err, recording.ErrOverwritten)) {
		overwritten := err
		body, err = recording.ReadFile(ctx, s.store, ref, m, key)
		err = errors.Join(overwritten, err)
	}
	switch {
	case errors.Is(err, recording.ErrOverwritten) && body != nil:
		// The genuine bytes are served; the overwrite is evidence of its own.
		_ = t.Lifecycle.Note(ctx, v1alpha1.StepTampered, c.Name, sess, "recording written over in the store: "+err.Error())
		h.Set("Breakglass-Warning", overwrittenWarning)
	case errors.Is(err, recording.ErrMismatch):
		_ = t.Lifecycle.Note(ctx, v1alpha1.StepTampered, c.Name, sess, "recording does not match its Session: "+err.Error())
		return nil, api.Conflict("the recording in the store is not this session's: %v", err)
	case errors.Is(err, recording.ErrNotFound):
		return nil, api.NotFound("the recording's %s is not in the store", key)
	case err != nil:
		// The store is away or failing: nothing says the evidence is wrong.
		return nil, fmt.Errorf("reading the recording: %w", err)
	}
	h.Set("X-Manifest-SHA256", sess.Status.Evidence.ManifestSHA256)
	return body, nil
}

const overwrittenWarning = "the store holds a newer version of this recording, written by someone else; the recorded version is served"
