package api

import (
	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/wire"
)

// Standing is one caller toward one session: what the relay's rules on who
// may do what read. The handlers ask these rules before they act, and a
// session's view offers what they allow (Offers), so that what a page
// offers and what the relay does are one decision.
type Standing struct {
	Caller  Caller
	Cluster string
	// Can says whether the caller holds a in the session's cluster and
	// namespace.
	Can func(a Action) bool
	// Moderated: the session's namespace needs a moderator watching.
	Moderated bool
	// Watching: the caller watches the session's terminal where it runs.
	// Where this relay does not run it, the replica that does judges
	// again, so it is taken as true here.
	Watching bool
}

// MayNot is the refusal of a caller without permission a in sess's namespace.
func (p Standing) MayNot(a Action, sess *v1alpha1.Session) error {
	return notPermitted(p.Caller, a, p.Cluster, sess.Namespace)
}

// notPermitted is the one refusal of c, who holds no permission a in
// namespace ns of cluster.
func notPermitted(c Caller, a Action, cluster, ns string) error {
	return Forbidden("%s may not %s sessions in %s/%s", c.Name, a, cluster, ns)
}

// AskedWith is the permission a session is asked for with: to break the
// glass, or to request. Its requester needs it to go on with it: taken away
// since, it takes away the start and any extension too.
func AskedWith(glassBroken bool) Action {
	if glassBroken {
		return ActionBreakGlass
	}
	return ActionRequest
}

// MayDecide refuses unless p may approve or deny sess: a request, never
// one's own, while it waits.
func (p Standing) MayDecide(sess *v1alpha1.Session) error {
	switch {
	case !p.Can(ActionApprove):
		return p.MayNot(ActionApprove, sess)
	case p.Caller.IsRequester(sess):
		return Forbidden("%s requested this session: another person decides on it", p.Caller.Name)
	case sess.Status.Phase != v1alpha1.PhasePending:
		return Conflict("the session is %s, not Pending", sess.Status.Phase)
	}
	return nil
}

// mayGoOn: the requester starting their approved session, or asking for
// more time on it, while still allowed to ask for it.
func (p Standing) mayGoOn(sess *v1alpha1.Session, what string) error {
	if !p.Caller.IsRequester(sess) {
		return Forbidden("only the requester, %s, %s on this session", sess.Spec.Requester, what)
	}
	if need := AskedWith(sess.Spec.GlassBroken); !p.Can(need) {
		return Forbidden("%s may no longer %s sessions in %s/%s", p.Caller.Name, need, p.Cluster, sess.Namespace)
	}
	return nil
}

// MayStart refuses unless p is the requester starting an approved session.
func (p Standing) MayStart(sess *v1alpha1.Session) error {
	if err := p.mayGoOn(sess, "starts"); err != nil {
		return err
	}
	if sess.Status.Phase != v1alpha1.PhaseApproved {
		return Conflict("the session is %s, not Approved", sess.Status.Phase)
	}
	return nil
}

// MayEnd says whether p may end sess now, and as whom the end is
// recorded. Its requester always may (ending never widens access). Before
// it starts, an approver cancels a request that a person decides on: one
// they could deny, or that a person approved; never a broken glass, or one
// the cluster needs no approval for: the approver role is no veto there. A
// moderator ends a moderated running session as they watch it. Otherwise
// the end permission.
func (p Standing) MayEnd(sess *v1alpha1.Session) (v1alpha1.EndReason, error) {
	st := sess.Status
	reason := v1alpha1.EndUser
	if !p.Caller.IsRequester(sess) {
		notStarted := st.Phase == v1alpha1.PhasePending || st.Phase == v1alpha1.PhaseApproved
		decided := st.Phase == v1alpha1.PhasePending || (st.Approval != nil && st.Approval.ByID != "" && !sess.Spec.GlassBroken)
		mayCancel := notStarted && decided && p.Can(ActionApprove)
		mayModerate := st.Phase == v1alpha1.PhaseActive && p.Moderated && p.Can(ActionApprove) && p.Watching
		if !mayCancel && !mayModerate && !p.Can(ActionEnd) {
			return "", p.MayNot(ActionEnd, sess)
		}
		reason = v1alpha1.EndApprover
	}
	switch st.Phase {
	case v1alpha1.PhasePending, v1alpha1.PhaseApproved, v1alpha1.PhaseActive:
		return reason, nil
	}
	return "", Conflict("the session is %s already", st.Phase)
}

// MayOpenTerminal says how p opens the terminal: the requester types, an
// approver watches read-only.
func (p Standing) MayOpenTerminal(sess *v1alpha1.Session) (readOnly bool, err error) {
	readOnly = !p.Caller.IsRequester(sess)
	if readOnly && !p.Can(ActionApprove) {
		return true, Forbidden("only the requester, or an approver watching, opens this terminal")
	}
	return readOnly, nil
}

// MayAskExtension refuses unless p is the requester asking for more time
// on their running session, one ask at a time.
func (p Standing) MayAskExtension(sess *v1alpha1.Session) error {
	return p.mayGoOn(sess, "asks for more time")
}

// MayDecideExtension refuses unless p is another person with the approve
// permission, answering an ask for more time: never the requester, by any
// spelling of them.
func (p Standing) MayDecideExtension(sess *v1alpha1.Session) error {
	if !p.Can(ActionApprove) {
		return p.MayNot(ActionApprove, sess)
	}
	if p.Caller.IsRequester(sess) {
		return Forbidden("%s requested this session: another person decides on its extension", p.Caller.Name)
	}
	return nil
}

// MayReview refuses unless p has the review permission and is not the
// requester, and sess will not run again and is unreviewed
// (Session.Reviewable): an expired one too, or a glass broken and never
// used could be neither reviewed nor deleted.
func (p Standing) MayReview(sess *v1alpha1.Session) error {
	switch {
	case !p.Can(ActionReview):
		return p.MayNot(ActionReview, sess)
	case p.Caller.IsRequester(sess):
		return Forbidden("%s requested this session: another person reviews it", p.Caller.Name)
	case sess.Reviewed():
		return Conflict("the session was reviewed by %s already", sess.Status.Review.By)
	case !sess.Reviewable():
		return Conflict("the session is %s: it is reviewed once it will not run again", sess.Status.Phase)
	}
	return nil
}

// MayPlay refuses unless p may play sess's finalized recording, once it
// has ended: its approvers and reviewers, and its requester. A recording of
// a process-access session is sensitive (it may show the app's memory and
// environment) and needs viewSensitive, whoever asks, the requester
// included.
func (p Standing) MayPlay(sess *v1alpha1.Session) error {
	sensitive := sess.Status.Approval != nil && sess.Status.Approval.ProcessAccess
	switch {
	case sensitive && !p.Can(ActionViewSensitive):
		return Forbidden("the recording of a process-access session is sensitive: %s may not view sensitive recordings in %s/%s",
			p.Caller.Name, p.Cluster, sess.Namespace)
	case p.Caller.IsRequester(sess), p.Can(ActionApprove), p.Can(ActionReview):
	default:
		return Forbidden("only the requester, approvers and reviewers play a session's recording")
	}
	if sess.Status.Phase != v1alpha1.PhaseEnded || sess.Status.Evidence == nil {
		return Conflict("the session is %s: its recording is served once it has ended and been finalized", sess.Status.Phase)
	}
	return nil
}

// Offers is what the caller may do to sess now: each offer is a rule above
// that allows it, and what the session asks for (a review only where one
// is due, a decision on more time only where it was asked for).
func (p Standing) Offers(sess *v1alpha1.Session) []wire.Offer {
	st := sess.Status
	out := []wire.Offer{}
	add := func(o wire.Offer, err error) {
		if err == nil {
			out = append(out, o)
		}
	}
	add(wire.OfferApprove, p.MayDecide(sess))
	add(wire.OfferDeny, p.MayDecide(sess))
	add(wire.OfferStart, p.MayStart(sess))
	if _, err := p.MayEnd(sess); err == nil {
		switch {
		case st.Phase == v1alpha1.PhaseActive:
			out = append(out, wire.OfferEnd)
		case p.Caller.IsRequester(sess):
			out = append(out, wire.OfferWithdraw)
		default:
			out = append(out, wire.OfferCancel)
		}
	}
	if st.Phase == v1alpha1.PhaseActive {
		if readOnly, err := p.MayOpenTerminal(sess); err == nil {
			out = append(out, map[bool]wire.Offer{false: wire.OfferType, true: wire.OfferWatch}[readOnly])
		}
		if st.ExtensionRequest == nil {
			add(wire.OfferExtend, p.MayAskExtension(sess))
		} else {
			add(wire.OfferDecideExtension, p.MayDecideExtension(sess))
		}
	}
	if sess.ReviewOpen() {
		add(wire.OfferReview, p.MayReview(sess))
	}
	add(wire.OfferPlay, p.MayPlay(sess))
	return out
}
