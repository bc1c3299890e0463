package debugsession

import (
	"errors"
	"fmt"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// ExtensionLimits bound one session's extensions, as the cluster's Session
// policy does with the chart's params (extensions.max, extensions.maxTotal):
// the relay refuses in its own words what the cluster would refuse anyway.
type ExtensionLimits struct {
	// Max is how many extensions a session may be given.
	Max int
	// MaxTotal is the longest a session may run, from its start to its
	// last hard stop.
	MaxTotal time.Duration
}

// ErrExtension is an extension the session's state or limits refuse: the
// person can do something about it (wait, ask for less, decide the one
// waiting), so it is a conflict, never a failure of the plane.
var ErrExtension = errors.New("extension refused")

// RefuseExtension is an extension refused for the reason format says.
func RefuseExtension(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrExtension, fmt.Sprintf(format, args...))
}

// Extensible says whether a session may be given more time now, as far as
// its record tells: running, before its hard stop, and in a mode whose
// pod can live longer.
func Extensible(s *v1alpha1.Session, now time.Time) error {
	switch {
	case s.Status.Phase != v1alpha1.PhaseActive || s.Status.Deadline == nil || s.Status.Grant == nil || s.Status.StartedAt == nil:
		return RefuseExtension("the session is %s, not running", s.Status.Phase)
	case !now.Before(s.Status.Deadline.Time):
		return RefuseExtension("the session is past its hard stop")
	case s.Spec.Mode == v1alpha1.ModeHeldCopy:
		return RefuseExtension("a held copy's app containers are held only for the time first asked for: request a new session")
	case s.Spec.Mode == v1alpha1.ModeCopy:
		// Its node ends the copy at its first grant's TTL
		// (activeDeadlineSeconds), which only ever shortens.
		return RefuseExtension("a copy lives no longer than the grant it was made under, and its node ends it then: request a new session")
	}
	return nil
}

// PlanExtension checks d more for a running session against its limits
// now (how many extensions, how long in all, and a grant that can cover
// the new hard stop from now within the longest TTL the policies allow),
// and gives the new hard stop and the TTL of the grant that covers it.
func (r *Runner) PlanExtension(s *v1alpha1.Session, d time.Duration, now time.Time) (deadline time.Time, ttl time.Duration, err error) {
	_, approved := s.Extended()
	if approved >= r.Extensions.Max {
		return deadline, 0, RefuseExtension("a session may be extended %d time(s), and this one has been", r.Extensions.Max)
	}
	if d < v1alpha1.MinExtension || d%time.Second != 0 {
		return deadline, 0, RefuseExtension("ask for at least %s, in whole seconds, not %s", v1alpha1.MinExtension, d)
	}
	deadline = s.Status.Deadline.Add(d)
	if total := deadline.Sub(s.Status.StartedAt.Time); total > r.Extensions.MaxTotal {
		return deadline, 0, RefuseExtension("a session runs at most %s in all: %s more would make it %s", r.Extensions.MaxTotal, d, total)
	}
	if ttl = r.extensionTTL(deadline, now); ttl > r.MaxTTL {
		room := r.MaxTTL - r.Grace - s.Status.Deadline.Sub(now)
		return deadline, 0, RefuseExtension("the new grant would need %s, more than the %s a grant may last: ask for at most %s now, or later", ttl, r.MaxTTL, room.Truncate(time.Minute))
	}
	return deadline, ttl, nil
}

// StartTTL is the TTL of a session's first grant: its duration and the
// grace after its hard stop, within the longest the policies allow.
func (r *Runner) StartTTL(s *v1alpha1.Session) time.Duration {
	return min(s.Spec.Duration.Duration+r.Grace, r.MaxTTL)
}

// extensionTTL is the TTL of a grant made now that covers a hard stop at
// deadline and the grace after it: whole seconds (the TTL label is a
// duration such as 47m12s), and never under the 15 minutes any grant lasts.
func (r *Runner) extensionTTL(deadline, now time.Time) time.Duration {
	ttl := (deadline.Sub(now) + r.Grace + time.Second - 1).Truncate(time.Second)
	return max(ttl, 15*time.Minute)
}
