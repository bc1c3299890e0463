package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/notify"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/wire"
)

// checkExtension says what is wrong with an ask, or how long it is for.
func checkExtension(q *wire.ExtensionAsk) (time.Duration, error) {
	var errs []string
	d, err := time.ParseDuration(q.Duration)
	if err != nil || !goDuration.MatchString(q.Duration) || d <= 0 {
		errs = append(errs, fmt.Sprintf("duration: %q is not a duration such as 30m", q.Duration))
	}
	if r := strings.TrimSpace(q.Reason); r == "" || len(q.Reason) > maxReason {
		errs = append(errs, fmt.Sprintf("reason: say why, in 1 to %d characters", maxReason))
	}
	if len(errs) > 0 {
		return 0, badRequest("%s", strings.Join(errs, "; "))
	}
	return d, nil
}

// askExtension records the requester's ask for more time, for another
// person to decide, on the replica running the session.
func (s *Server) askExtension(w http.ResponseWriter, r *http.Request, c Caller) error {
	var q wire.ExtensionAsk
	// Kept: the ask may be passed on to the replica running the session.
	if err := keepBody(r); err != nil {
		return err
	}
	if err := decode(r, &q); err != nil {
		return err
	}
	d, err := checkExtension(&q)
	if err != nil {
		return err
	}
	t, sess, err := s.sessionFor(r, c, "")
	if err != nil {
		return err
	}
	if err := s.standingOf(c, t, sess).mayAskExtension(sess); err != nil {
		return err
	}
	return s.onRunning(w, r, c, t, sess, func(ctx context.Context, live *debugsession.Live) error {
		if err := live.AskExtension(ctx, c.Name, c.ID, d, q.Reason); err != nil {
			return err
		}
		s.notify(ctx, notify.Event{Kind: v1alpha1.NotifyExtensionRequested, Cluster: t.Name}, live.Snapshot())
		return nil
	})
}

func (s *Server) approveExtension(w http.ResponseWriter, r *http.Request, c Caller) error {
	return s.decideExtension(w, r, c, true)
}

func (s *Server) denyExtension(w http.ResponseWriter, r *http.Request, c Caller) error {
	return s.decideExtension(w, r, c, false)
}

// decideExtension is an approver's answer to an extension asked for: never
// the requester's, by any spelling of them (the Session policy checks the
// same by identity).
func (s *Server) decideExtension(w http.ResponseWriter, r *http.Request, c Caller, approve bool) error {
	var d wire.Decision
	if err := keepBody(r); err != nil {
		return err
	}
	if err := decode(r, &d); err != nil {
		return err
	}
	if len(d.Comment) > maxReason || len(d.Reason) > maxReason {
		return badRequest("comment and reason are at most %d characters", maxReason)
	}
	t, sess, err := s.sessionFor(r, c, ActionApprove)
	if err != nil {
		return err
	}
	if err := s.standingOf(c, t, sess).mayDecideExtension(sess); err != nil {
		return err
	}
	words := d.Comment
	if !approve && d.Reason != "" {
		words = d.Reason
	}
	return s.onRunning(w, r, c, t, sess, func(ctx context.Context, live *debugsession.Live) error {
		if err := live.DecideExtension(ctx, c.Name, c.ID, approve, words); err != nil {
			return err
		}
		kind := map[bool]string{true: v1alpha1.NotifyExtensionApproved, false: v1alpha1.NotifyExtensionDenied}[approve]
		s.notify(ctx, notify.Event{Kind: kind, Cluster: t.Name}, live.Snapshot())
		return nil
	})
}

// onRunning runs do on the live session sess, here or, through passOn, on
// the replica that runs it, and answers with the Session as do left it.
// do runs under the session's own lock (Live's), so it sees and writes the
// Session the heartbeat writes too.
func (s *Server) onRunning(w http.ResponseWriter, r *http.Request, c Caller, t *target, sess *v1alpha1.Session,
	do func(context.Context, *debugsession.Live) error) error {
	if sess.Status.Phase != v1alpha1.PhaseActive {
		return conflict("the session is %s, not Active", sess.Status.Phase)
	}
	live, _, passed, err := s.running(w, r, t, sess)
	if passed || err != nil {
		return err
	}
	// A person hanging up must not cut a grant's replacement in two.
	ctx := context.WithoutCancel(r.Context())
	if err := do(ctx, live); err != nil {
		if errors.Is(err, debugsession.ErrExtension) {
			return conflict("%s", err.Error())
		}
		return clusterError(err)
	}
	writeJSON(w, http.StatusOK, s.view(c, t, live.Snapshot()))
	return nil
}
