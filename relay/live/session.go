package live

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/wire"
)

// settle ends a start or take-up of key: run goes on as live, or (live nil) the
// session is not this relay's after all. Requests waiting on it go on.
func (s *Sessions) settle(key sessionKey, run *liveSession, live *Session) {
	s.mu.Lock()
	if live == nil {
		delete(s.live, key)
	} else {
		run.live = live
	}
	lost := run.lost
	s.mu.Unlock()
	close(run.ready)
	if live != nil && lost {
		s.log.Info("letting go of a session that settled after this replica let go", "session", key.String())
		go live.Lose()
	}
}

// running is the session sess as this relay runs it. A session this relay
// is starting or taking up is waited for: its Session is Active in the
// cluster a moment before its terminal is attached, and a page that reads
// it Active connects at once. A session another replica runs is passed on
// to it (passed); one nobody here runs is NotRunHere.
func (s *Sessions) running(w http.ResponseWriter, r *http.Request, t *Cluster, sess *v1alpha1.Session) (live *Session, run *liveSession, passed bool, err error) {
	key := keyOf(t.Name, sess)
	s.mu.Lock()
	run = s.live[key]
	s.mu.Unlock()
	if run != nil {
		select {
		case <-run.ready:
		case <-r.Context().Done():
			return nil, nil, false, r.Context().Err()
		}
		if run.live != nil {
			return run.live, run, false, nil
		}
		// The start or take-up here failed: what the Session says now.
		if err := t.Client.Get(r.Context(), client.ObjectKeyFromObject(sess), sess); err != nil {
			return nil, nil, false, err
		}
		if sess.Status.Phase != v1alpha1.PhaseActive {
			return nil, nil, false, api.Conflict("the session is %s, not Active", sess.Status.Phase)
		}
	}
	if s.passOn(w, r, sess) {
		return nil, nil, true, nil
	}
	return nil, nil, false, &api.Error{Status: http.StatusConflict, Reason: "NotRunHere", Message: errNotHere.Error()}
}

// errNotHere is an Active session this relay does not hold, e.g. after a
// restart: the sweeper ends it once its heartbeat is stale.
var errNotHere = errors.New("the session is Active but not run by this relay; the sweeper ends it once its heartbeat goes stale")

// Start starts the requester's approved session here: its grant, its
// debug container and its recorded terminal, then its limits.
func (s *Sessions) Start(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	ctx := r.Context()
	t, sess, err := s.sessionFor(r, c, "")
	if err != nil {
		return err
	}
	if err := s.api.StandingOf(c, t.Cluster, sess).MayStart(sess); err != nil {
		return err
	}
	key := keyOf(t.Name, sess)
	s.mu.Lock()
	if _, ok := s.live[key]; ok {
		s.mu.Unlock()
		return api.Conflict("the session is starting or started already")
	}
	if t.presence != nil && !t.presence.present() {
		s.mu.Unlock()
		return &api.Error{Status: http.StatusServiceUnavailable, Reason: "NotPresent", Message: fmt.Sprintf(
			"this relay replica has lost touch with cluster %s a moment ago and starts nothing there until it is back: try again in a few seconds", t.Name)}
	}
	run := newLiveSession()
	s.live[key] = run
	s.mu.Unlock()
	// A caller that hangs up mid-start must not leave a half-started
	// session: the start runs to its end, or takes its grant back.
	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer cancel()
	live, err := Start(startCtx, t.Runner, sess)
	s.settle(key, run, live)
	if err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return api.ClusterError(err)
		}
		// The target is read here first, under the session's own grant (the
		// relay has no standing read to check it with when the request is
		// made): a pod not there leaves the session Approved, to withdraw.
		// Anything not found later ended the start already.
		now := &v1alpha1.Session{}
		if apierrors.IsNotFound(err) && t.Client.Get(ctx, client.ObjectKeyFromObject(sess), now) == nil && now.Status.Phase == v1alpha1.PhaseApproved {
			return &api.Error{Status: http.StatusNotFound, Reason: "TargetNotFound", Message: fmt.Sprintf("%v: withdraw this request and ask again for a pod that runs now", err)}
		}
		return &api.Error{Status: http.StatusServiceUnavailable, Reason: "StartFailed", Message: err.Error()}
	}
	s.metrics.live.Inc()
	// What the answer and the notification show is taken before the
	// watcher may write the Session.
	snapshot := live.Session.DeepCopy()
	s.enforce(key, live)
	s.api.Notify(ctx, t.Name, v1alpha1.NotifySessionStarted, snapshot)
	api.WriteJSON(w, http.StatusOK, s.api.View(c, t.Cluster, snapshot))
	return nil
}

// enforce runs the session's limits until it ends, whoever ends it.
func (s *Sessions) enforce(key sessionKey, live *Session) {
	ctx, cancel := context.WithCancel(context.Background())
	s.enforcers.Add(2)
	go func() {
		defer s.enforcers.Done()
		<-live.Ended()
		cancel()
	}()
	go func() {
		defer s.enforcers.Done()
		if reason, err := live.Enforce(ctx, s.limits); reason != "" || (err != nil && ctx.Err() == nil) {
			if err != nil {
				s.log.Error(err, "ending a session on its limit", "session", key.String(), "reason", reason)
			}
		}
		<-live.Ended()
		s.mu.Lock()
		delete(s.live, key)
		s.mu.Unlock()
		s.metrics.live.Dec()
	}()
}

// maxEndNote bounds the words kept with an end, as the Session's schema does.
const maxEndNote = 1024

// End ends a session for a person: one not started yet in the cluster
// alone, a running one where it runs.
func (s *Sessions) End(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	var q wire.EndRequest
	if r.ContentLength != 0 {
		// Kept: the end may be passed on to the replica running the session.
		if err := keepBody(r); err != nil {
			return err
		}
		if err := api.Decode(r, &q); err != nil {
			return err
		}
		if n := utf8.RuneCountInString(q.Reason); n > maxEndNote {
			return api.BadRequest("an end's reason is at most %d characters, not %d", maxEndNote, n)
		}
	}
	ctx := r.Context()
	t, sess, err := s.sessionFor(r, c, "")
	if err != nil {
		return err
	}
	// A moderator's end is judged where the session runs: a replica not
	// running it passes it on (Sessions.Watching).
	reason, err := s.api.StandingOf(c, t.Cluster, sess).MayEnd(sess)
	if err != nil {
		return err
	}
	switch sess.Status.Phase {
	case v1alpha1.PhasePending, v1alpha1.PhaseApproved:
		// Never started: nothing to take back but the request itself.
		if err := t.Lifecycle.Make(ctx, sess, api.EndedUnstarted(c, reason, q.Reason, s.clock.Now())); err != nil {
			return api.ClusterError(err)
		}
		api.WriteJSON(w, http.StatusOK, s.api.View(c, t.Cluster, sess))
		return nil
	}
	live, _, passed, err := s.running(w, r, t, sess)
	if passed || err != nil {
		return err
	}
	if err := live.End(context.WithoutCancel(ctx), c.Name, reason, q.Reason); err != nil {
		return err
	}
	s.api.Notify(ctx, t.Name, v1alpha1.NotifySessionEnded, live.Session)
	api.WriteJSON(w, http.StatusOK, s.api.View(c, t.Cluster, live.Session))
	return nil
}

// runs is key's entry, if this replica runs a started session there.
func (s *Sessions) runs(key sessionKey) *liveSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.live[key]; ok && l.live != nil {
		return l
	}
	return nil
}
