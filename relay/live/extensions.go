package live

import (
	"context"
	"errors"
	"net/http"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/wire"
)

// AskExtension records the requester's ask for more time, for another
// person to decide, on the replica running the session.
func (s *Sessions) AskExtension(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	var q wire.ExtensionAsk
	// Kept: the ask may be passed on to the replica running the session.
	if err := keepBody(r); err != nil {
		return err
	}
	if err := api.Decode(r, &q); err != nil {
		return err
	}
	d, err := api.CheckExtension(&q)
	if err != nil {
		return err
	}
	t, sess, err := s.sessionFor(r, c, "")
	if err != nil {
		return err
	}
	if err := s.api.StandingOf(c, t.Cluster, sess).MayAskExtension(sess); err != nil {
		return err
	}
	return s.onRunning(w, r, c, t, sess, func(ctx context.Context, live *Session) error {
		if err := live.AskExtension(ctx, c.Name, c.ID, d, q.Reason); err != nil {
			return err
		}
		s.api.Notify(ctx, t.Name, v1alpha1.NotifyExtensionRequested, live.Snapshot())
		return nil
	})
}

// ApproveExtension grants the time asked for, by another person.
func (s *Sessions) ApproveExtension(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	return s.decideExtension(w, r, c, true)
}

// DenyExtension refuses the time asked for.
func (s *Sessions) DenyExtension(w http.ResponseWriter, r *http.Request, c api.Caller) error {
	return s.decideExtension(w, r, c, false)
}

// decideExtension is an approver's answer to an extension asked for: never
// the requester's, by any spelling of them (the Session policy checks the
// same by identity).
func (s *Sessions) decideExtension(w http.ResponseWriter, r *http.Request, c api.Caller, approve bool) error {
	var d wire.Decision
	if err := keepBody(r); err != nil {
		return err
	}
	if err := api.Decode(r, &d); err != nil {
		return err
	}
	if len(d.Comment) > api.MaxReason || len(d.Reason) > api.MaxReason {
		return api.BadRequest("comment and reason are at most %d characters", api.MaxReason)
	}
	t, sess, err := s.sessionFor(r, c, api.ActionApprove)
	if err != nil {
		return err
	}
	if err := s.api.StandingOf(c, t.Cluster, sess).MayDecideExtension(sess); err != nil {
		return err
	}
	words := d.Comment
	if !approve && d.Reason != "" {
		words = d.Reason
	}
	return s.onRunning(w, r, c, t, sess, func(ctx context.Context, live *Session) error {
		if err := live.DecideExtension(ctx, c.Name, c.ID, approve, words); err != nil {
			return err
		}
		kind := map[bool]string{true: v1alpha1.NotifyExtensionApproved, false: v1alpha1.NotifyExtensionDenied}[approve]
		s.api.Notify(ctx, t.Name, kind, live.Snapshot())
		return nil
	})
}

// onRunning runs do on the live session sess, here or, through passOn, on
// the replica that runs it, and answers with the Session as do left it.
// do runs under the session's own lock (Session's), so it sees and writes the
// Session the heartbeat writes too.
func (s *Sessions) onRunning(w http.ResponseWriter, r *http.Request, c api.Caller, t *Cluster, sess *v1alpha1.Session,
	do func(context.Context, *Session) error) error {
	if sess.Status.Phase != v1alpha1.PhaseActive {
		return api.Conflict("the session is %s, not Active", sess.Status.Phase)
	}
	live, _, passed, err := s.running(w, r, t, sess)
	if passed || err != nil {
		return err
	}
	// A person hanging up must not cut a grant's replacement in two.
	ctx := context.WithoutCancel(r.Context())
	if err := do(ctx, live); err != nil {
		if errors.Is(err, debugsession.ErrExtension) {
			return api.Conflict("%s", err.Error())
		}
		return api.ClusterError(err)
	}
	api.WriteJSON(w, http.StatusOK, s.api.View(c, t.Cluster, live.Snapshot()))
	return nil
}
