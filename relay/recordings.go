package relay

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
)

// recordingFiles are what may be fetched, by the name the API uses.
var recordingFiles = map[string]struct{ key, contentType string }{
	"cast":       {recording.CastFile, "application/x-asciicast"},
	"transcript": {recording.TranscriptFile, "application/octet-stream"},
	"manifest":   {recording.ManifestFile, "application/json"},
}

// recording serves an ended session's evidence to a permitted person: its
// approvers and reviewers, and its requester; a recording of a
// process-access session is sensitive (it may show the app's memory and
// environment) and needs viewSensitive, whoever asks, the requester
// included. Every play is audited.
func (s *Server) recording(w http.ResponseWriter, r *http.Request, c Caller) error {
	file := r.URL.Query().Get("file")
	if file == "" {
		file = "cast"
	}
	f, ok := recordingFiles[file]
	if !ok {
		return badRequest("file: %q is not one of cast, transcript, manifest", file)
	}
	ctx := r.Context()
	t, sess, err := s.sessionFor(r, c, "")
	if err != nil {
		return err
	}
	ns := sess.Namespace
	sensitive := sess.Status.Approval != nil && sess.Status.Approval.ProcessAccess
	switch {
	case sensitive && !s.cfg.can(c, ActionViewSensitive, t.Name, ns):
		return forbidden("the recording of a process-access session is sensitive: %s may not view sensitive recordings in %s/%s", c.Name, t.Name, ns)
	case c.IsRequester(sess), s.cfg.can(c, ActionApprove, t.Name, ns), s.cfg.can(c, ActionReview, t.Name, ns):
	default:
		return forbidden("only the requester, approvers and reviewers play a session's recording")
	}
	if sess.Status.Phase != v1alpha1.PhaseEnded || sess.Status.Evidence == nil {
		return conflict("the session is %s: its recording is served once it has ended and been finalized", sess.Status.Phase)
	}
	// Served only what the Session names: the manifest of this cluster's
	// Session with this UID, at the version and hash the Session recorded,
	// and the file at the version and hash the manifest names. Anything
	// written over them since is reported, never served.
	ref := recording.RefOf(t.Name, sess)
	m, manifest, err := recording.ReadManifest(ctx, s.store, ref, sess.Status.Evidence)
	body := manifest
	if f.key != recording.ManifestFile && (err == nil || errors.Is(err, recording.ErrOverwritten)) {
		overwritten := err
		body, err = recording.ReadFile(ctx, s.store, ref, m, f.key)
		err = errors.Join(overwritten, err)
	}
	switch {
	case errors.Is(err, recording.ErrOverwritten) && body != nil:
		// The genuine bytes are served; the overwrite is evidence of its own.
		_ = t.runner.Lifecycle().Note(ctx, "tampered", c.Name, sess, "recording written over in the store: "+err.Error())
		w.Header().Set("Breakglass-Warning", "the store holds a newer version of this recording, written by someone else; the recorded version is served")
	case errors.Is(err, recording.ErrMismatch):
		_ = t.runner.Lifecycle().Note(ctx, "tampered", c.Name, sess, "recording does not match its Session: "+err.Error())
		return conflict("the recording in the store is not this session's: %v", err)
	case errors.Is(err, recording.ErrNotFound):
		return notFound("the recording's %s is not in the store", file)
	case err != nil:
		// The store is away or failing: nothing says the evidence is wrong.
		return fmt.Errorf("reading the recording: %w", err)
	}
	if err := t.runner.Lifecycle().Note(ctx, "play", c.Name, sess, file); err != nil {
		return err
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("Content-Disposition", "attachment; filename="+f.key)
	apiHeaders(w.Header())
	w.Header().Set("X-Manifest-SHA256", sess.Status.Evidence.ManifestSHA256)
	_, _ = w.Write(body)
	return nil
}
