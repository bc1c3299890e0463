package relay

import (
	"slices"
	"sort"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/wire"
)

// Every actor's moves in the lifecycle's model (lifecycle_model_test.go):
// each offered or decided by the code, each writing what the handler, the
// runner or the sweeper writes.

// next is every move from s that the code allows and the cluster admits.
func (m *modelChecker) next(s modelState) []modelMove {
	var out []modelMove
	at := metav1.NewTime(s.now)
	pending := m.sw.Anchors != nil
	move := func(mv modelMove, writer string, change func(e *modelEdit)) {
		if mv, ok := m.apply(s, mv, writer, change); ok {
			out = append(out, mv)
		}
	}
	st := s.sess.Status
	for _, p := range append([]modelPerson{modelAlice}, modelOthers...) {
		mine := p.IsRequester(s.sess)
		person := func(what string, change func(e *modelEdit)) {
			move(modelMove{actor: p.Name, what: what, byPerson: true, byRequester: mine}, v1alpha1.PortalUsername, change)
		}
		for _, o := range m.offers(p.standing(), s.sess) {
			switch o {
			case wire.OfferApprove:
				person("approve", func(e *modelEdit) {
					e.status.Phase = v1alpha1.PhaseApproved
					e.status.Approval = &v1alpha1.Approval{Kind: v1alpha1.ApprovalPerson, By: p.Name, ByID: p.ID, At: at, Mode: v1alpha1.ModeLive}
				})
			case wire.OfferDeny:
				person("deny", func(e *modelEdit) {
					e.status.Phase, e.status.Denial = v1alpha1.PhaseDenied, &v1alpha1.Denial{By: p.Name, ByID: p.ID, At: at, Reason: "not now"}
				})
			case wire.OfferStart:
				person("start", func(e *modelEdit) { m.start(e, s) })
			case wire.OfferEnd, wire.OfferWithdraw, wire.OfferCancel:
				reason, _ := p.standing().MayEnd(s.sess)
				end := &v1alpha1.End{By: p.Name, Reason: reason, At: at}
				person(string(o), func(e *modelEdit) { m.end(e, end, pending) })
				if st.StartedAt != nil {
					// The store away at the end: the relay ends it without evidence.
					person(string(o)+" (store away)", func(e *modelEdit) { m.end(e, end, pending); e.status.Evidence = nil })
				}
			case wire.OfferType, wire.OfferWatch, wire.OfferPlay:
				// No change to the Session.
			case wire.OfferExtend:
				if len(st.Extensions) > 0 || debugsession.Extensible(s.sess, s.now) != nil {
					// One ask per session bounds the model.
					continue
				}
				person("ask for more time", func(e *modelEdit) {
					e.status.ExtensionRequest = &v1alpha1.ExtensionRequest{Duration: metav1.Duration{Duration: 15 * time.Minute},
						Reason: "still digging", By: p.Name, ByID: p.ID, At: at}
				})
			case wire.OfferDecideExtension:
				m.decideExtension(s, p, person)
			case wire.OfferReview:
				person("review", func(e *modelEdit) {
					if e.status.Review == nil {
						e.status.Review = &v1alpha1.Review{}
					}
					e.status.Review.By, e.status.Review.ByID, e.status.Review.At = p.Name, p.ID, &at
				})
			default:
				m.t.Errorf("the model does not know what offer %q does", o)
			}
		}
	}
	out = append(out, m.relayMoves(s, pending)...)
	out = append(out, m.sweeperMoves(s, pending)...)
	return out
}

// start is the relay's start as Runner.Start makes it: the grant, then
// the debug container, then the status.
func (m *modelChecker) start(e *modelEdit, s modelState) {
	at := metav1.NewTime(s.now)
	ttl := m.runner.StartTTL(s.sess)
	name := v1alpha1.GrantName(s.sess.Name)
	e.grant(name, v1alpha1.DebugRole, ttl, s.now)
	deadline := metav1.NewTime(s.now.Add(s.sess.Spec.Duration.Duration))
	e.status.Phase, e.status.StartedAt, e.status.Deadline, e.status.Heartbeat = v1alpha1.PhaseActive, &at, &deadline, &at
	e.status.Grant = &v1alpha1.Grant{RoleBinding: name, Role: v1alpha1.DebugRole, ExpiresAt: metav1.NewTime(s.now.Add(ttl))}
	e.status.DebugContainer = &v1alpha1.DebugContainer{Pod: "web-1", Name: v1alpha1.DebugContainerName(s.sess.Name, 0)}
}

// end is the relay's end: the grant it runs on revoked, the evidence
// written for a session that ran.
func (m *modelChecker) end(e *modelEdit, end *v1alpha1.End, pending bool) {
	e.status.Phase, e.status.End = v1alpha1.PhaseEnded, end
	if g := e.status.Grant; g != nil {
		e.revoke(g.RoleBinding)
	}
	if e.status.StartedAt != nil {
		e.status.Evidence = modelEvidence(pending)
	}
}

// decideExtension is p's answer to an ask for more time, as
// Live.DecideExtension makes it: an approval the runner's plan allows
// makes a new grant, moves the hard stop, then deletes the grant it
// replaced (which may fail, leaving it to the grant sweeper).
func (m *modelChecker) decideExtension(s modelState, p modelPerson, person func(string, func(*modelEdit))) {
	q := s.sess.Status.ExtensionRequest
	if debugsession.Extensible(s.sess, s.now) != nil {
		return
	}
	decided := v1alpha1.Extension{ExtensionRequest: *q, DecidedBy: p.Name, DecidedByID: p.ID, DecidedAt: metav1.NewTime(s.now)}
	person("deny more time", func(e *modelEdit) {
		d := decided
		d.Decision = v1alpha1.ExtensionDenied
		e.status.Extensions, e.status.ExtensionRequest = append(e.status.Extensions, d), nil
	})
	deadline, ttl, err := m.runner.PlanExtension(s.sess, q.Duration.Duration, s.now)
	if err != nil {
		return
	}
	_, approved := s.sess.Extended()
	approve := func(e *modelEdit) {
		old := e.status.Grant.RoleBinding
		name := v1alpha1.ExtensionGrantName(s.sess.Name, approved+1)
		e.grant(name, e.status.Grant.Role, ttl, s.now)
		d, at := decided, metav1.NewTime(deadline)
		d.Decision, d.Grant, d.Deadline = v1alpha1.ExtensionApproved, name, &at
		e.status.Extensions, e.status.ExtensionRequest = append(e.status.Extensions, d), nil
		e.status.Grant = &v1alpha1.Grant{RoleBinding: name, Role: e.status.Grant.Role, ExpiresAt: metav1.NewTime(s.now.Add(ttl))}
		e.status.Deadline = &at
		e.revoke(old)
	}
	person("approve more time", approve)
	person("approve more time (the old grant's delete fails)", func(e *modelEdit) {
		kept := slices.Clone(e.grants)
		approve(e)
		e.grants = append(e.grants, kept...)
		e.grants = slices.CompactFunc(sortGrants(e.grants), func(a, b *rbacv1.RoleBinding) bool { return a.Name == b.Name })
	})
}

func sortGrants(gs []*rbacv1.RoleBinding) []*rbacv1.RoleBinding {
	sort.Slice(gs, func(i, j int) bool { return gs[i].Name < gs[j].Name })
	return gs
}

// relayMoves are the relay's own: a start that fails (Runner.failedStart,
// endFailedStart: its grant taken back), a running session's heartbeat
// and its limits.
func (m *modelChecker) relayMoves(s modelState, pending bool) []modelMove {
	var out []modelMove
	add := func(what string, requesters bool, change func(*modelEdit)) {
		if mv, ok := m.apply(s, modelMove{actor: "relay", what: what, byRequester: requesters}, v1alpha1.PortalUsername, change); ok {
			out = append(out, mv)
		}
	}
	at := metav1.NewTime(s.now)
	switch st := s.sess.Status; st.Phase {
	case v1alpha1.PhaseApproved:
		// Only the requester's start fails: it is theirs to count on.
		add("a failed start", true, func(e *modelEdit) {
			e.status.Phase, e.status.End = v1alpha1.PhaseEnded, &v1alpha1.End{By: v1alpha1.PortalUsername, Reason: v1alpha1.EndFailedStart, At: at, Abnormal: true}
		})
	case v1alpha1.PhaseActive:
		add("a limit", false, func(e *modelEdit) {
			m.end(e, &v1alpha1.End{By: v1alpha1.PortalUsername, Reason: v1alpha1.EndIdle, At: at}, pending)
		})
	}
	return out
}

// sweeperMoves are the sweeper's (sweeper.Judge on the Session,
// sweeper.GrantDue on each grant) and the clock's: time passes to the
// soonest moment either looks again, never past a grant due to go (the
// grant sweeper deletes it the moment it is told to look).
func (m *modelChecker) sweeperMoves(s modelState, pending bool) []modelMove {
	var out []modelMove
	add := func(what string, change func(*modelEdit)) {
		if mv, ok := m.apply(s, modelMove{actor: "sweeper", what: what}, v1alpha1.SweeperUsername, change); ok {
			out = append(out, mv)
		}
	}
	at := metav1.NewTime(s.now)
	j := m.sw.Judge(s.sess, s.now)
	if j.End {
		add("end an abandoned session", func(e *modelEdit) {
			e.status.Phase, e.status.End = v1alpha1.PhaseEnded, &v1alpha1.End{By: v1alpha1.SweeperUsername, Reason: v1alpha1.EndSwept, At: at, Abnormal: true}
		})
	}
	if j.Expire {
		add("expire", func(e *modelEdit) { e.status.Phase = v1alpha1.PhaseExpired })
	}
	if j.Recycle && len(s.grants) > 0 {
		add("take the grants of an ended session", func(e *modelEdit) { e.grants = nil })
	}
	if j.Finalize {
		add("finalize the evidence", func(e *modelEdit) { e.status.Evidence = modelEvidence(pending) })
	}
	if j.Anchor {
		add("anchor", func(e *modelEdit) {
			ev := *e.status.Evidence
			ev.AnchorPending, ev.LogIndex, ev.EntryID = false, new(int64), "entry-1"
			e.status.Evidence = &ev
		})
	}
	if j.SetDueAt != nil {
		add("set the review's due date", func(e *modelEdit) {
			due := metav1.NewTime(*j.SetDueAt)
			if e.status.Review == nil {
				e.status.Review = &v1alpha1.Review{}
			}
			e.status.Review.DueAt = &due
		})
	}
	if j.NotifyFallback {
		add("tell the fallback reviewer", func(e *modelEdit) { e.status.Review.FallbackNotified = true })
	}
	step := j.RequeueIn
	for _, g := range s.grants {
		expired, in := m.grantDue(g, s.now)
		if expired {
			add("delete expired grant "+g.Name, func(e *modelEdit) { e.revoke(g.Name) })
			step = -1
		} else if in > 0 && step >= 0 && (step == 0 || in < step) {
			step = in
		}
	}
	if step > 0 {
		out = append(out, modelMove{actor: "clock", what: "passes " + step.String(), to: modelState{sess: s.sess, grants: s.grants, now: s.now.Add(step)}})
	}
	return out
}

// modelEvidence is a finalized recording, pending its anchor where a log
// is configured.
func modelEvidence(pending bool) *v1alpha1.Evidence {
	return &v1alpha1.Evidence{URIs: []string{"s3://recordings/shop/s-1/manifest.json"}, ManifestSHA256: strings.Repeat("a", 64), AnchorPending: pending}
}
