package relay

import (
	"errors"
	"net/http"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/wire"
)

// running is the relay's live side as the decisions API sees it
// (api.Running): what it reads of the sessions this replica runs.
type running struct{ s *Server }

func (rn running) Watching(cluster string, sess *v1alpha1.Session, name string) bool {
	held := rn.s.holding(sessionKey{cluster, sess.Namespace, sess.Name})
	return held == nil || held.watching(name)
}

// Live: its countdowns are counted where it runs.
func (rn running) Live(w http.ResponseWriter, r *http.Request, cluster string, sess *v1alpha1.Session) (*wire.LiveView, bool) {
	key := sessionKey{cluster, sess.Namespace, sess.Name}
	if rn.s.held(key) == nil && rn.s.passOn(w, r, sess) {
		return nil, true
	}
	return rn.s.liveView(key), false
}

// sessionFor is api.Sessions.SessionFor, with the cluster as the live side
// knows it: its runner and presence.
func (s *Server) sessionFor(r *http.Request, c api.Caller, a api.Action) (*target, *v1alpha1.Session, error) {
	cl, sess, err := s.sessions.SessionFor(r, c, a)
	if err != nil {
		return nil, nil, err
	}
	return s.clusters[cl.Name], sess, nil
}

func (s *Server) standingOf(c api.Caller, t *target, sess *v1alpha1.Session) api.Standing {
	return s.sessions.StandingOf(c, t.api, sess)
}

func (s *Server) view(c api.Caller, t *target, sess *v1alpha1.Session) wire.SessionView {
	return s.sessions.View(c, t.api, sess)
}

// errNotHere is an Active session this relay does not hold, e.g. after a
// restart: the sweeper ends it once its heartbeat is stale.
var errNotHere = errors.New("the session is Active but not held by this relay; the sweeper ends it once its heartbeat goes stale")
