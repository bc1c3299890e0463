package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tower-dev/breakglass/lifecycle"
)

// Error is a refusal with its HTTP status, a stable reason and a message
// for people.
type Error struct {
	Status  int    `json:"-"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// BadRequest refuses what is malformed: the message says what is wrong.
func BadRequest(format string, a ...any) error {
	return &Error{http.StatusBadRequest, "BadRequest", fmt.Sprintf(format, a...)}
}

// Forbidden refuses a caller without the standing for what they ask.
func Forbidden(format string, a ...any) error {
	return &Error{http.StatusForbidden, "Forbidden", fmt.Sprintf(format, a...)}
}

// Conflict refuses what the session's state does not allow now.
func Conflict(format string, a ...any) error {
	return &Error{http.StatusConflict, "Conflict", fmt.Sprintf(format, a...)}
}

// NotFound refuses a path naming nothing there.
func NotFound(format string, a ...any) error {
	return &Error{http.StatusNotFound, "NotFound", fmt.Sprintf(format, a...)}
}

// Internal is a failure of the relay's own, said as it is.
func Internal(err error) *Error {
	return &Error{http.StatusInternalServerError, "Internal", err.Error()}
}

// ClusterError turns the API server's refusal (an admission policy, a
// conflict) into the API's; its message names the policy that refused.
func ClusterError(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err):
		return Conflict("the session changed meanwhile; reload it and try again")
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err):
		return &Error{http.StatusForbidden, "RefusedByCluster", err.Error()}
	case errors.Is(err, lifecycle.ErrCannotMove):
		return Conflict("%v", err)
	case errors.Is(err, lifecycle.ErrNotAudited):
		return &Error{http.StatusServiceUnavailable, "AuditUnavailable", err.Error()}
	}
	return err
}

// WriteError answers with e.
func WriteError(w http.ResponseWriter, e *Error) {
	WriteJSON(w, e.Status, map[string]*Error{"error": e})
}

// WriteJSON answers with v.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	Headers(w.Header())
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// Headers keep an answer of the API from ever being a page, whatever its
// bytes (a recording is the pod's output; an error repeats a path): no
// sniffing, no script, no framing, no caching.
func Headers(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'; frame-ancestors 'none'")
}

// MaxBody bounds a request body: every body is a small JSON object.
const MaxBody = 64 << 10

// Decode reads a JSON body strictly: unknown fields and trailing data are
// refused, so a misspelt "keepPod" is an error, not a silent default.
func Decode(r *http.Request, v any) error {
	if r.Body == nil {
		return BadRequest("a JSON body is required")
	}
	d := json.NewDecoder(http.MaxBytesReader(nil, r.Body, MaxBody))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return BadRequest("the body is larger than %d bytes", MaxBody)
		}
		return BadRequest("the body is not the expected JSON: %v", err)
	}
	if d.More() {
		return BadRequest("the body has data after its JSON object")
	}
	return nil
}
