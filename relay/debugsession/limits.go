package debugsession

import (
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Limits end a session: the hard stop is its duration; Idle is how long
// nobody may type; Disconnect is how long nobody may watch. Heartbeat is how
// often the relay tells the cluster it is alive (the sweeper ends a session
// whose heartbeat goes stale). Flush is how often what was recorded since
// the last segment is written as a segment (default 5s): a relay that dies
// loses at most that much.
type Limits struct {
	Idle, Disconnect, Heartbeat, Flush time.Duration
}

// staleBeats is how many heartbeat intervals a session's heartbeat must
// have been silent before another relay may take it up.
const staleBeats = 3

// StaleAfter is how long a session's heartbeat must have been silent
// before another relay may take it up.
func StaleAfter(every time.Duration) time.Duration { return staleBeats * every }

// MustLetGo says whether a relay whose last heartbeat for a session was
// written at lastBeat must let go of it by now: one interval before its
// heartbeat counts as stale and another relay may take it up.
func MustLetGo(lastBeat, now time.Time, every time.Duration) bool {
	return now.Sub(lastBeat) >= StaleAfter(every)-every
}

// TakenUp says whether the Session as read now (fresh) is no longer the
// one this relay runs (held): another relay resumed it, or it ended.
func TakenUp(held, fresh *v1alpha1.Session) bool {
	return fresh.Status.Phase != v1alpha1.PhaseActive || fresh.Status.Resumes != held.Status.Resumes
}
