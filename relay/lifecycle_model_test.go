package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/vap"
)

// The lifecycle, checked exhaustively: from each way a Session begins (a
// request, a broken glass, a cluster that needs no approval), every move
// any actor can make, explored breadth-first. Each move is the code's own
// decision: what the relay offers each person (standing.offers, the rules
// its handlers ask), what the sweeper decides (sweeper.Judge), and each
// status write and the admin's delete judged by the Session policies with
// the API server's CEL (vap). The model writes only each move's effect, as
// the handler or the sweeper writes it.

// modelPerson is one person of the model and the permissions they hold.
type modelPerson struct {
	Caller
	can map[Action]bool
}

// standing is the person toward any session of the model, as the relay
// judges a caller: their permissions in its one namespace, watching.
func (p modelPerson) standing() standing {
	return standing{c: p.Caller, cluster: "c", can: func(a Action) bool { return p.can[a] }, watching: true}
}

var (
	modelT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	// alice asks; bob approves and reviews; carol reviews only; dave is
	// the fallback reviewer.
	modelAlice  = modelPerson{Caller{ID: "idp#alice", Name: "alice"}, map[Action]bool{ActionRequest: true, ActionBreakGlass: true}}
	modelOthers = []modelPerson{
		{Caller{ID: "idp#bob", Name: "bob"}, map[Action]bool{ActionApprove: true, ActionReview: true}},
		{Caller{ID: "idp#carol", Name: "carol"}, map[Action]bool{ActionReview: true}},
		{Caller{ID: "idp#dave", Name: "dave"}, map[Action]bool{ActionReview: true}},
	}
	modelReviewWithin = 24 * time.Hour
)

// modelSweeper is the sweeper as configured: with a transparency log, or
// with none (recordings then never pend for an anchor).
func modelSweeper(withLog bool) *sweeper.SessionSweeper {
	sw := &sweeper.SessionSweeper{HeartbeatTimeout: 2 * time.Minute, Grace: time.Minute, ReviewWithin: modelReviewWithin,
		PendingFor: time.Hour, ApprovedFor: 30 * time.Minute, Evidence: modelStore{}, AnchorAfter: 5 * time.Minute}
	if withLog {
		sw.Anchors = modelStore{}
	}
	return sw
}

// modelStore stands for the recording store and the log in the sweeper's
// configuration: decide only asks whether they are there.
type modelStore struct{}

func (modelStore) Finalize(context.Context, *v1alpha1.Session) (*v1alpha1.Evidence, error) {
	return nil, nil
}
func (modelStore) Anchor(context.Context, *v1alpha1.Session) (*v1alpha1.Evidence, error) {
	return nil, nil
}

// modelState is a Session and the clock.
type modelState struct {
	sess *v1alpha1.Session
	now  time.Time
}

func (m modelState) key() string {
	b, _ := json.Marshal(struct {
		P v1alpha1.SessionSpec
		S v1alpha1.SessionStatus
		T int64
	}{m.sess.Spec, m.sess.Status, m.now.Unix()})
	return string(b)
}

// modelMove is one actor's move: who, what, and the state after it.
type modelMove struct {
	actor, what string
	to          modelState
	// byRequester: the requester's own move, which the no-dead-end
	// property may not count on (they may be gone).
	byRequester bool
}

// modelChecker explores the lifecycle and holds what it found.
type modelChecker struct {
	t      *testing.T
	sw     *sweeper.SessionSweeper
	policy *vap.Evaluator
	states map[string]modelState
	moves  map[string][]modelMove
	// refused are moves the code decided and the cluster refused.
	refused []string
}

func newModelChecker(t *testing.T, sw *sweeper.SessionSweeper) *modelChecker {
	pairs, err := vap.BuildAll(policies.Flight, policies.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	return &modelChecker{t: t, sw: sw, policy: vap.NewEvaluator(pairs), states: map[string]modelState{}, moves: map[string][]modelMove{}}
}

// starts are the three ways a Session begins, as Server.request writes them.
func modelStarts() []modelState {
	newSession := func(glass bool) *v1alpha1.Session {
		return &v1alpha1.Session{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Session"},
			ObjectMeta: metav1.ObjectMeta{Name: "s-1", Namespace: "shop", CreationTimestamp: metav1.NewTime(modelT0)},
			Spec: v1alpha1.SessionSpec{TargetPod: "web-1", Mode: v1alpha1.ModeLive, Duration: metav1.Duration{Duration: 30 * time.Minute},
				Reason: "checkout 500s", Requester: modelAlice.Name, RequesterID: modelAlice.ID, GlassBroken: glass}}
	}
	now := metav1.NewTime(modelT0)
	asked := newSession(false)
	asked.Status.Phase = v1alpha1.PhasePending
	glass := newSession(true)
	due := metav1.NewTime(modelT0.Add(modelReviewWithin))
	glass.Status = v1alpha1.SessionStatus{Phase: v1alpha1.PhaseApproved, Review: &v1alpha1.Review{DueAt: &due},
		Approval: &v1alpha1.Approval{Kind: v1alpha1.ApprovalGlassBroken, By: "glass broken by alice", At: now, Mode: v1alpha1.ModeLive}}
	free := newSession(false)
	free.Status = v1alpha1.SessionStatus{Phase: v1alpha1.PhaseApproved,
		Approval: &v1alpha1.Approval{Kind: v1alpha1.ApprovalNotRequired, By: "approval not required on c", At: now, Mode: v1alpha1.ModeLive}}
	return []modelState{{asked, modelT0}, {glass, modelT0}, {free, modelT0}}
}

// explore walks every state reachable from the starts, breadth-first.
func (m *modelChecker) explore(starts []modelState) {
	queue := []modelState{}
	for _, s := range starts {
		m.states[s.key()] = s
		queue = append(queue, s)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, mv := range m.next(s) {
			m.moves[s.key()] = append(m.moves[s.key()], mv)
			if _, seen := m.states[mv.to.key()]; !seen {
				m.states[mv.to.key()] = mv.to
				queue = append(queue, mv.to)
			}
		}
	}
}

// next is every move from s that the code allows and the cluster admits.
func (m *modelChecker) next(s modelState) []modelMove {
	var out []modelMove
	at := metav1.NewTime(s.now)
	pending := m.sw.Anchors != nil
	write := func(actor, what string, byRequester bool, writer string, change func(st *v1alpha1.SessionStatus)) {
		after := s.sess.DeepCopy()
		change(&after.Status)
		v1alpha1.SetConditions(&after.Status, at) // as lifecycle.Make writes every status
		if res := m.judge(admissionregistrationv1.Update, "status", writer, after, s.sess); !res.Allowed() {
			m.refused = append(m.refused, fmt.Sprintf("%s's %s from %s: %v", actor, what, s.sess.Status.Phase, res.Denials))
			return
		}
		out = append(out, modelMove{actor: actor, what: what, to: modelState{after, s.now}, byRequester: byRequester})
	}
	for _, p := range append([]modelPerson{modelAlice}, modelOthers...) {
		st := p.standing()
		mine := p.IsRequester(s.sess)
		for _, o := range st.offers(s.sess) {
			switch o {
			case wire.OfferApprove:
				write(p.Name, "approve", mine, v1alpha1.PortalUsername, func(x *v1alpha1.SessionStatus) {
					x.Phase, x.Approval = v1alpha1.PhaseApproved, &v1alpha1.Approval{Kind: v1alpha1.ApprovalPerson, By: p.Name, ByID: p.ID, At: at, Mode: v1alpha1.ModeLive}
				})
			case wire.OfferDeny:
				write(p.Name, "deny", mine, v1alpha1.PortalUsername, func(x *v1alpha1.SessionStatus) {
					x.Phase, x.Denial = v1alpha1.PhaseDenied, &v1alpha1.Denial{By: p.Name, ByID: p.ID, At: at, Reason: "not now"}
				})
			case wire.OfferStart:
				write(p.Name, "start", mine, v1alpha1.PortalUsername, func(x *v1alpha1.SessionStatus) {
					deadline := metav1.NewTime(s.now.Add(s.sess.Spec.Duration.Duration))
					x.Phase, x.StartedAt, x.Deadline, x.Heartbeat = v1alpha1.PhaseActive, &at, &deadline, &at
					x.Grant = &v1alpha1.Grant{RoleBinding: "breakglass-s-1", Role: "breakglass:debug", ExpiresAt: metav1.NewTime(deadline.Add(5 * time.Minute))}
					x.DebugContainer = &v1alpha1.DebugContainer{Pod: "web-1", Name: "debug-s-1"}
				})
			case wire.OfferEnd, wire.OfferWithdraw, wire.OfferCancel:
				reason, _ := st.mayEnd(s.sess)
				end := &v1alpha1.End{By: p.Name, Reason: reason, At: at}
				write(p.Name, string(o), mine, v1alpha1.PortalUsername, func(x *v1alpha1.SessionStatus) {
					x.Phase, x.End = v1alpha1.PhaseEnded, end
					if x.StartedAt != nil {
						x.Evidence = modelEvidence(pending)
					}
				})
				if s.sess.Status.StartedAt != nil {
					// The store away at the end: the relay ends it without evidence.
					write(p.Name, string(o)+" (store away)", mine, v1alpha1.PortalUsername, func(x *v1alpha1.SessionStatus) {
						x.Phase, x.End = v1alpha1.PhaseEnded, end
					})
				}
			case wire.OfferType, wire.OfferWatch, wire.OfferPlay:
				// No change to the Session.
			case wire.OfferExtend, wire.OfferDecideExtension:
				// More time moves the deadline, never the phase: left out
				// of the model (a bound it would make infinite).
			case wire.OfferReview:
				write(p.Name, "review", mine, v1alpha1.PortalUsername, func(x *v1alpha1.SessionStatus) {
					if x.Review == nil {
						x.Review = &v1alpha1.Review{}
					}
					x.Review.By, x.Review.ByID, x.Review.At = p.Name, p.ID, &at
				})
			default:
				m.t.Errorf("the model does not know what offer %q does", o)
			}
		}
	}
	// The relay's own moves: a start that fails (Runner.failedStart,
	// endFailedStart), and a running session's limits.
	switch s.sess.Status.Phase {
	case v1alpha1.PhaseApproved:
		// Only the requester's start fails: it is theirs to count on.
		write("relay", "a failed start", true, v1alpha1.PortalUsername, func(x *v1alpha1.SessionStatus) {
			x.Phase, x.End = v1alpha1.PhaseEnded, &v1alpha1.End{By: v1alpha1.PortalUsername, Reason: v1alpha1.EndFailedStart, At: at, Abnormal: true}
		})
	case v1alpha1.PhaseActive:
		write("relay", "a limit", false, v1alpha1.PortalUsername, func(x *v1alpha1.SessionStatus) {
			x.Phase, x.End = v1alpha1.PhaseEnded, &v1alpha1.End{By: v1alpha1.PortalUsername, Reason: v1alpha1.EndIdle, At: at}
			x.Evidence = modelEvidence(pending)
		})
	}
	j := m.sw.Judge(s.sess, s.now)
	sweeps := []struct {
		do     bool
		what   string
		change func(x *v1alpha1.SessionStatus)
	}{
		{j.End, "end an abandoned session", func(x *v1alpha1.SessionStatus) {
			x.Phase, x.End = v1alpha1.PhaseEnded, &v1alpha1.End{By: v1alpha1.SweeperUsername, Reason: v1alpha1.EndSwept, At: at, Abnormal: true}
		}},
		{j.Expire, "expire", func(x *v1alpha1.SessionStatus) { x.Phase = v1alpha1.PhaseExpired }},
		{j.Finalize, "finalize the evidence", func(x *v1alpha1.SessionStatus) { x.Evidence = modelEvidence(pending) }},
		{j.Anchor, "anchor", func(x *v1alpha1.SessionStatus) {
			e := *x.Evidence
			e.AnchorPending, e.LogIndex, e.EntryID = false, new(int64), "entry-1"
			x.Evidence = &e
		}},
		{j.SetDueAt != nil, "set the review's due date", func(x *v1alpha1.SessionStatus) {
			due := metav1.NewTime(*j.SetDueAt)
			if x.Review == nil {
				x.Review = &v1alpha1.Review{}
			}
			x.Review.DueAt = &due
		}},
		{j.NotifyFallback, "tell the fallback reviewer", func(x *v1alpha1.SessionStatus) { x.Review.FallbackNotified = true }},
	}
	for _, sw := range sweeps {
		if sw.do {
			write("sweeper", sw.what, false, v1alpha1.SweeperUsername, sw.change)
		}
	}
	if j.RequeueIn > 0 {
		out = append(out, modelMove{actor: "clock", what: "passes " + j.RequeueIn.String(), to: modelState{s.sess, s.now.Add(j.RequeueIn)}})
	}
	return out
}

// modelEvidence is a finalized recording, pending its anchor where a log
// is configured.
func modelEvidence(pending bool) *v1alpha1.Evidence {
	return &v1alpha1.Evidence{URIs: []string{"s3://recordings/shop/s-1/manifest.json"}, ManifestSHA256: strings.Repeat("a", 64), AnchorPending: pending}
}

// judge runs the plane's policies on a write (or delete) of a Session.
func (m *modelChecker) judge(op admissionregistrationv1.OperationType, sub, username string, obj, old *v1alpha1.Session) vap.Result {
	toMap := func(s *v1alpha1.Session) map[string]any {
		if s == nil {
			return nil
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
		if err != nil {
			m.t.Fatal(err)
		}
		return u
	}
	u := &user.DefaultInfo{Name: username}
	if username == v1alpha1.PortalUsername || username == v1alpha1.SweeperUsername {
		// The plane's writes come from its pods' bound tokens.
		u.Extra = map[string][]string{"authentication.kubernetes.io/pod-name": {"tower-breakglass-0"}}
	}
	return m.policy.Evaluate(context.Background(), vap.Request{Operation: op, SubResource: sub, Namespace: "shop", Name: "s-1",
		Resource: schema.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: "v1alpha1", Resource: "sessions"},
		Kind:     v1alpha1.GroupVersion.WithKind("Session"), Object: toMap(obj), OldObject: toMap(old), User: u})
}

// deletable: a cluster admin's delete of the Session is admitted.
func (m *modelChecker) deletable(s modelState) bool {
	return m.judge(admissionregistrationv1.Delete, "", "admin", nil, s.sess).Allowed()
}

// finishable are the states from which a deletable one is reached by the
// plane, the clock and people other than the requester alone.
func (m *modelChecker) finishable() map[string]bool {
	ok := map[string]bool{}
	for k, s := range m.states {
		if m.deletable(s) {
			ok[k] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for k, moves := range m.moves {
			if ok[k] {
				continue
			}
			for _, mv := range moves {
				if !mv.byRequester && ok[mv.to.key()] {
					ok[k], changed = true, true
					break
				}
			}
		}
	}
	return ok
}

func (m *modelChecker) describe(s modelState) string {
	st := s.sess.Status
	parts := []string{string(st.Phase), "glass=" + fmt.Sprint(s.sess.Spec.GlassBroken)}
	if st.Approval != nil {
		parts = append(parts, "approval="+string(st.Approval.Kind))
	}
	parts = append(parts, "started="+fmt.Sprint(st.StartedAt != nil), "evidence="+fmt.Sprint(st.Evidence != nil))
	if st.Review != nil {
		parts = append(parts, fmt.Sprintf("review(due=%t by=%q)", st.Review.DueAt != nil, st.Review.By))
	}
	return strings.Join(parts, " ") + " at +" + s.now.Sub(modelT0).String()
}

// TestLifecycleHasNoDeadEnds explores the lifecycle and holds it to its
// properties: every move the code makes is admitted by the cluster; from
// every state the record can be finished and deleted without its
// requester; a review that is open, once the session will not run again,
// is offered to someone other than the requester.
func TestLifecycleHasNoDeadEnds(t *testing.T) {
	for name, withLog := range map[string]bool{"with a transparency log": true, "without one": false} {
		t.Run(name, func(t *testing.T) { checkLifecycle(t, newModelChecker(t, modelSweeper(withLog))) })
	}
}

func checkLifecycle(t *testing.T, m *modelChecker) {
	m.explore(modelStarts())
	moves := 0
	for _, ms := range m.moves {
		moves += len(ms)
	}
	t.Logf("%d states, %d moves explored", len(m.states), moves)
	if len(m.states) < 20 {
		t.Fatalf("only %d states explored: the model stopped early", len(m.states))
	}
	for _, r := range m.refused {
		t.Errorf("a move the code made was refused by the cluster: %s", r)
	}
	ok := m.finishable()
	var stuck []string
	for k, s := range m.states {
		if !ok[k] {
			stuck = append(stuck, m.describe(s))
		}
	}
	sort.Strings(stuck)
	for _, s := range stuck {
		t.Errorf("a dead end: from %s no move of the plane, the clock or anyone but the requester leads to a record that may be deleted", s)
	}
	for _, s := range m.states {
		if !s.sess.ReviewOpen() || !s.sess.Status.Phase.Final() {
			continue
		}
		offered := false
		for _, p := range modelOthers {
			st := p.standing()
			for _, o := range st.offers(s.sess) {
				offered = offered || o == wire.OfferReview
			}
		}
		if !offered {
			t.Errorf("%s waits for a review nobody but its requester is offered", m.describe(s))
		}
	}
}
