package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/vap"
)

// The lifecycle, checked exhaustively: from each way a Session begins (a
// request, a broken glass, a cluster that needs no approval), every move
// any actor can make, explored breadth-first. Each move is the code's own
// decision: what the relay offers each person (api.Standing.Offers, the rules
// its handlers ask), what the sweeper decides (sweeper.Judge), and each
// status write and the admin's delete judged by the Session policies with
// the API server's CEL (vap). The model writes only each move's effect, as
// the handler or the sweeper writes it.

// modelPerson is one person of the model and the permissions they hold.
type modelPerson struct {
	api.Caller
	can map[api.Action]bool
}

// api.Standing is the person toward any session of the model, as the relay
// judges a caller: their permissions in its one namespace, watching.
func (p modelPerson) standing() api.Standing {
	return api.Standing{Caller: p.Caller, Cluster: "c", Can: func(a api.Action) bool { return p.can[a] }, Watching: true}
}

var (
	modelT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	// alice asks; bob approves and reviews; carol reviews only; dave is
	// the fallback reviewer.
	modelAlice  = modelPerson{api.Caller{ID: "idp#alice", Name: "alice"}, map[api.Action]bool{api.ActionRequest: true, api.ActionBreakGlass: true}}
	modelOthers = []modelPerson{
		{api.Caller{ID: "idp#bob", Name: "bob"}, map[api.Action]bool{api.ActionApprove: true, api.ActionReview: true}},
		{api.Caller{ID: "idp#carol", Name: "carol"}, map[api.Action]bool{api.ActionReview: true}},
		{api.Caller{ID: "idp#dave", Name: "dave"}, map[api.Action]bool{api.ActionReview: true}},
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

// modelRunner is the relay's grant and extension decisions as configured
// by default: the grace after a hard stop, the longest grant, one
// extension within two hours.
func modelRunner() *debugsession.Runner {
	return &debugsession.Runner{Grace: 2 * time.Minute, MaxTTL: 75 * time.Minute,
		Extensions: debugsession.ExtensionLimits{Max: v1alpha1.DefaultMaxExtensions, MaxTotal: v1alpha1.DefaultMaxTotal}}
}

// modelState is a Session, the grants api.Standing for it, and the clock.
type modelState struct {
	sess *v1alpha1.Session
	// grants are the session's RoleBindings, by name.
	grants []*rbacv1.RoleBinding
	now    time.Time
}

func (m modelState) key() string {
	type grant struct {
		Name, TTL string
		At        int64
	}
	gs := []grant{}
	for _, g := range m.grants {
		gs = append(gs, grant{g.Name, g.Labels[v1alpha1.TTLLabel], g.CreationTimestamp.Unix()})
	}
	// When a condition changed, a review or denial was made or more time
	// asked and answered is written down, and no decision reads it: states
	// apart only by those times are one.
	st := *m.sess.Status.DeepCopy()
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	if st.Review != nil {
		st.Review.At = nil
	}
	if st.Denial != nil {
		st.Denial.At = metav1.Time{}
	}
	if st.ExtensionRequest != nil {
		st.ExtensionRequest.At = metav1.Time{}
	}
	for i := range st.Extensions {
		st.Extensions[i].At, st.Extensions[i].DecidedAt = metav1.Time{}, metav1.Time{}
	}
	b, _ := json.Marshal(struct {
		P v1alpha1.SessionSpec
		S v1alpha1.SessionStatus
		G []grant
		T int64
	}{m.sess.Spec, st, gs, m.now.Unix()})
	return string(b)
}

// modelEdit is what one move changes: the Session's status, and the
// grants it makes and deletes.
type modelEdit struct {
	status *v1alpha1.SessionStatus
	grants []*rbacv1.RoleBinding
}

// grant makes a grant now, named and lasting as the relay makes it.
func (e *modelEdit) grant(name, role string, ttl time.Duration, now time.Time) {
	g := sessionobjects.Grant("shop", name, "s-1", role, ttl.String())
	g.CreationTimestamp = metav1.NewTime(now)
	e.grants = append(e.grants, g)
	sort.Slice(e.grants, func(i, j int) bool { return e.grants[i].Name < e.grants[j].Name })
}

// revoke deletes the grant named, if it stands.
func (e *modelEdit) revoke(name string) {
	e.grants = slices.DeleteFunc(e.grants, func(g *rbacv1.RoleBinding) bool { return g.Name == name })
}

// modelMove is one actor's move: who, what, and the state after it.
type modelMove struct {
	actor, what string
	to          modelState
	// byPerson: a person's move (not the plane's or the clock's);
	// byRequester: the requester's own, which the no-dead-end property
	// may not count on (they may be gone).
	byPerson, byRequester bool
}

// modelChecker explores the lifecycle and holds what it found.
type modelChecker struct {
	t      *testing.T
	sw     *sweeper.SessionSweeper
	runner *debugsession.Runner
	policy *vap.Evaluator
	// offers and grantDue are the relay's and the grant sweeper's
	// decisions; a seeded bug replaces one.
	offers   func(api.Standing, *v1alpha1.Session) []wire.Offer
	grantDue func(*rbacv1.RoleBinding, time.Time) (bool, time.Duration)
	states   map[string]modelState
	moves    map[string][]modelMove
	// refused are moves the code decided and the cluster refused.
	refused []string
}

func newModelChecker(t *testing.T, sw *sweeper.SessionSweeper) *modelChecker {
	pairs, err := vap.BuildAll(policies.Flight, policies.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	return &modelChecker{t: t, sw: sw, runner: modelRunner(), policy: vap.NewEvaluator(pairs),
		offers: api.Standing.Offers, grantDue: sweeper.GrantDue, states: map[string]modelState{}, moves: map[string][]modelMove{}}
}

// starts are the three ways a Session begins, as the relay's request
// decision (api.Requested) makes them: asked, glass broken, and where no
// approval is needed.
func modelStarts() []modelState {
	start := func(glass, needsApproval bool) modelState {
		q := &wire.Request{Pod: "web-1", Mode: v1alpha1.ModeLive, Duration: "30m", Reason: "checkout returns 500s", GlassBroken: glass}
		at := api.Where{Cluster: "c", NeedsApproval: needsApproval, ReviewWithin: modelReviewWithin}
		sess, move, _ := api.Requested(modelAlice.Caller, q, 30*time.Minute, "shop", at, modelT0)
		sess.Name, sess.CreationTimestamp = "s-1", metav1.NewTime(modelT0)
		sess.Status.Phase = move.To
		if move.Status != nil {
			move.Status(&sess.Status)
		}
		return modelState{sess: sess, now: modelT0}
	}
	return []modelState{start(false, true), start(true, true), start(false, false)}
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

// apply makes one move from s if the cluster admits it: the status write
// and each grant made are judged by the policies, as the API server
// judges them.
func (m *modelChecker) apply(s modelState, mv modelMove, writer string, change func(e *modelEdit)) (modelMove, bool) {
	after := s.sess.DeepCopy()
	e := &modelEdit{status: &after.Status, grants: slices.Clone(s.grants)}
	change(e)
	for _, g := range e.grants {
		if slices.Contains(s.grants, g) {
			continue
		}
		if res := m.judgeGrant(g); !res.Allowed() {
			m.refused = append(m.refused, fmt.Sprintf("%s's %s: grant %s: %v", mv.actor, mv.what, g.Name, res.Denials))
			return mv, false
		}
	}
	if !equality.Semantic.DeepEqual(after.Status, s.sess.Status) {
		v1alpha1.SetConditions(&after.Status, metav1.NewTime(s.now)) // as lifecycle.Make writes every status
		if res := m.judge(admissionregistrationv1.Update, "status", writer, after, s.sess); !res.Allowed() {
			m.refused = append(m.refused, fmt.Sprintf("%s's %s from %s: %v", mv.actor, mv.what, s.sess.Status.Phase, res.Denials))
			return mv, false
		}
	}
	mv.to = modelState{sess: after, grants: e.grants, now: s.now}
	return mv, true
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
	return m.policy.Evaluate(context.Background(), vap.Request{Operation: op, SubResource: sub, Namespace: "shop", Name: "s-1",
		Resource: schema.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: "v1alpha1", Resource: "sessions"},
		Kind:     v1alpha1.GroupVersion.WithKind("Session"), Object: toMap(obj), OldObject: toMap(old), User: modelUser(username)})
}

// modelUser is who the API server takes a writer for.
func modelUser(username string) user.Info {
	u := &user.DefaultInfo{Name: username}
	if username == v1alpha1.PortalUsername || username == v1alpha1.SweeperUsername {
		// The plane's writes come from its pods' bound tokens.
		u.Extra = map[string][]string{"authentication.kubernetes.io/pod-name": {"tower-breakglass-0"}}
	}
	return u
}

// judgeGrant runs the plane's policies on the relay's create of a grant.
func (m *modelChecker) judgeGrant(g *rbacv1.RoleBinding) vap.Result {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(g)
	if err != nil {
		m.t.Fatal(err)
	}
	return m.policy.Evaluate(context.Background(), vap.Request{Operation: admissionregistrationv1.Create, Namespace: "shop", Name: g.Name,
		Resource: rbacv1.SchemeGroupVersion.WithResource("rolebindings"), Kind: rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		Object: u, User: modelUser(v1alpha1.PortalUsername)})
}

// deletable: a cluster admin's delete of the Session is admitted.
func (m *modelChecker) deletable(s modelState) bool {
	return m.judge(admissionregistrationv1.Delete, "", "admin", nil, s.sess).Allowed()
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
