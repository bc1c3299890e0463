package relay

import (
	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/wire"
)

// standing is one caller toward one session: what the relay's rules on who
// may do what read. The handlers ask these rules before they act, and a
// session's view offers what they allow (offers), so that what a page
// offers and what the relay does are one decision.
type standing struct {
	c       Caller
	cluster string
	// can says whether the caller holds a in the session's cluster and
	// namespace.
	can func(a Action) bool
	// moderated: the session's namespace needs a moderator watching.
	moderated bool
	// watching: the caller watches the session's terminal where it runs.
	// Where this relay does not run it, the replica that does judges
	// again, so it is taken as true here.
	watching bool
}

// standingOf is c toward sess on t, as this relay knows it now.
func (s *Server) standingOf(c Caller, t *target, sess *v1alpha1.Session) standing {
	ns := sess.Namespace
	held := s.holding(sessionKey{t.Name, ns, sess.Name})
	return standing{c: c, cluster: t.Name, can: func(a Action) bool { return s.cfg.can(c, a, t.Name, ns) },
		moderated: t.Moderates(ns), watching: held == nil || held.watching(c.Name)}
}

// mayNot is the refusal of a caller without permission a in sess's namespace.
func (p standing) mayNot(a Action, sess *v1alpha1.Session) error {
	return forbidden("%s may not %s sessions in %s/%s", p.c.Name, a, p.cluster, sess.Namespace)
}

// askedWith is the permission sess's requester needs to go on with it: to
// ask for it in the first place. Taken away since, it takes away the start
// and any extension too.
func askedWith(sess *v1alpha1.Session) Action {
	if sess.Spec.GlassBroken {
		return ActionBreakGlass
	}
	return ActionRequest
}

// mayDecide: approve or deny a request, never one's own, while it waits.
func (p standing) mayDecide(sess *v1alpha1.Session) error {
	switch {
	case !p.can(ActionApprove):
		return p.mayNot(ActionApprove, sess)
	case p.c.IsRequester(sess):
		return forbidden("%s requested this session: another person decides on it", p.c.Name)
	case sess.Status.Phase != v1alpha1.PhasePending:
		return conflict("the session is %s, not Pending", sess.Status.Phase)
	}
	return nil
}

// mayGoOn: the requester starting their approved session, or asking for
// more time on it, while still allowed to ask for it.
func (p standing) mayGoOn(sess *v1alpha1.Session, what string) error {
	if !p.c.IsRequester(sess) {
		return forbidden("only the requester, %s, %s on this session", sess.Spec.Requester, what)
	}
	if need := askedWith(sess); !p.can(need) {
		return forbidden("%s may no longer %s sessions in %s/%s", p.c.Name, need, p.cluster, sess.Namespace)
	}
	return nil
}

// mayStart: the requester starts an approved session.
func (p standing) mayStart(sess *v1alpha1.Session) error {
	if err := p.mayGoOn(sess, "starts"); err != nil {
		return err
	}
	if sess.Status.Phase != v1alpha1.PhaseApproved {
		return conflict("the session is %s, not Approved", sess.Status.Phase)
	}
	return nil
}

// mayEnd: who ends sess now, and as whom the end is recorded. Its requester
// always may (ending never widens access). Before it starts, an approver
// cancels a request that a person decides on: one they could deny, or that
// a person approved; never a broken glass, or one the cluster needs no
// approval for: the approver role is no veto there. A moderator ends a
// moderated running session as they watch it. Otherwise the end
// permission.
func (p standing) mayEnd(sess *v1alpha1.Session) (v1alpha1.EndReason, error) {
	st := sess.Status
	reason := v1alpha1.EndUser
	if !p.c.IsRequester(sess) {
		notStarted := st.Phase == v1alpha1.PhasePending || st.Phase == v1alpha1.PhaseApproved
		decided := st.Phase == v1alpha1.PhasePending || (st.Approval != nil && st.Approval.ByID != "" && !sess.Spec.GlassBroken)
		mayCancel := notStarted && decided && p.can(ActionApprove)
		mayModerate := st.Phase == v1alpha1.PhaseActive && p.moderated && p.can(ActionApprove) && p.watching
		if !mayCancel && !mayModerate && !p.can(ActionEnd) {
			return "", forbidden("%s may not end sessions in %s/%s", p.c.Name, p.cluster, sess.Namespace)
		}
		reason = v1alpha1.EndApprover
	}
	switch st.Phase {
	case v1alpha1.PhasePending, v1alpha1.PhaseApproved, v1alpha1.PhaseActive:
		return reason, nil
	}
	return "", conflict("the session is %s already", st.Phase)
}

// mayOpenTerminal: the requester types, an approver watches read-only.
func (p standing) mayOpenTerminal(sess *v1alpha1.Session) (readOnly bool, err error) {
	readOnly = !p.c.IsRequester(sess)
	if readOnly && !p.can(ActionApprove) {
		return true, forbidden("only the requester, or an approver watching, opens this terminal")
	}
	return readOnly, nil
}

// mayAskExtension: the requester asks for more time on their running
// session, one ask at a time.
func (p standing) mayAskExtension(sess *v1alpha1.Session) error {
	return p.mayGoOn(sess, "asks for more time")
}

// mayDecideExtension: another person with the approve permission answers
// an ask for more time, never the requester, by any spelling of them.
func (p standing) mayDecideExtension(sess *v1alpha1.Session) error {
	if !p.can(ActionApprove) {
		return p.mayNot(ActionApprove, sess)
	}
	if p.c.IsRequester(sess) {
		return forbidden("%s requested this session: another person decides on its extension", p.c.Name)
	}
	return nil
}

// mayReview: someone with the review permission, never the requester,
// reviews a session that will not run again, once (Session.Reviewable):
// an expired one too, or a glass broken and never used could be neither
// reviewed nor deleted.
func (p standing) mayReview(sess *v1alpha1.Session) error {
	switch {
	case !p.can(ActionReview):
		return p.mayNot(ActionReview, sess)
	case p.c.IsRequester(sess):
		return forbidden("%s requested this session: another person reviews it", p.c.Name)
	case sess.Reviewed():
		return conflict("the session was reviewed by %s already", sess.Status.Review.By)
	case !sess.Reviewable():
		return conflict("the session is %s: it is reviewed once it will not run again", sess.Status.Phase)
	}
	return nil
}

// mayPlay: its approvers and reviewers, and its requester, play an ended
// session's finalized recording; a recording of a process-access session is
// sensitive (it may show the app's memory and environment) and needs
// viewSensitive, whoever asks, the requester included.
func (p standing) mayPlay(sess *v1alpha1.Session) error {
	sensitive := sess.Status.Approval != nil && sess.Status.Approval.ProcessAccess
	switch {
	case sensitive && !p.can(ActionViewSensitive):
		return forbidden("the recording of a process-access session is sensitive: %s may not view sensitive recordings in %s/%s",
			p.c.Name, p.cluster, sess.Namespace)
	case p.c.IsRequester(sess), p.can(ActionApprove), p.can(ActionReview):
	default:
		return forbidden("only the requester, approvers and reviewers play a session's recording")
	}
	if sess.Status.Phase != v1alpha1.PhaseEnded || sess.Status.Evidence == nil {
		return conflict("the session is %s: its recording is served once it has ended and been finalized", sess.Status.Phase)
	}
	return nil
}

// offers is what the caller may do to sess now: each offer is a rule above
// that allows it, and what the session asks for (a review only where one
// is due, a decision on more time only where it was asked for).
func (p standing) offers(sess *v1alpha1.Session) []wire.Offer {
	st := sess.Status
	out := []wire.Offer{}
	add := func(o wire.Offer, err error) {
		if err == nil {
			out = append(out, o)
		}
	}
	add(wire.OfferApprove, p.mayDecide(sess))
	add(wire.OfferDeny, p.mayDecide(sess))
	add(wire.OfferStart, p.mayStart(sess))
	if _, err := p.mayEnd(sess); err == nil {
		switch {
		case st.Phase == v1alpha1.PhaseActive:
			out = append(out, wire.OfferEnd)
		case p.c.IsRequester(sess):
			out = append(out, wire.OfferWithdraw)
		default:
			out = append(out, wire.OfferCancel)
		}
	}
	if st.Phase == v1alpha1.PhaseActive {
		if readOnly, err := p.mayOpenTerminal(sess); err == nil {
			out = append(out, map[bool]wire.Offer{false: wire.OfferType, true: wire.OfferWatch}[readOnly])
		}
		if st.ExtensionRequest == nil {
			add(wire.OfferExtend, p.mayAskExtension(sess))
		} else {
			add(wire.OfferDecideExtension, p.mayDecideExtension(sess))
		}
	}
	if sess.ReviewOpen() {
		add(wire.OfferReview, p.mayReview(sess))
	}
	add(wire.OfferPlay, p.mayPlay(sess))
	return out
}
