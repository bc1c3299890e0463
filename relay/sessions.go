package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/notify"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/wire"
)

// view is sess as c sees it on t: with what c may do to it now.
func (s *Server) view(c Caller, t *target, sess *v1alpha1.Session) wire.SessionView {
	return wire.SessionView{Cluster: t.Name, Namespace: sess.Namespace, Name: sess.Name, Created: sess.CreationTimestamp,
		Spec: sess.Spec, Status: sess.Status, May: s.standingOf(c, t, sess).offers(sess)}
}

// The bounds the chart installs; the cluster checks its own again.
const (
	minDuration = 15 * time.Minute
	maxDuration = 75 * time.Minute
	maxReason   = wire.MaxReason
)

var goDuration = regexp.MustCompile(`^([0-9]+h)?([0-9]+m)?([0-9]+s)?$`)

// checkRequest says what is wrong with a request, or how long it is for.
func checkRequest(q *wire.Request) (time.Duration, error) {
	var errs []string
	if msgs := validation.IsDNS1123Subdomain(q.Pod); q.Pod == "" || len(msgs) > 0 {
		errs = append(errs, fmt.Sprintf("pod: %q is not a pod name", q.Pod))
	}
	if q.Container != "" && len(validation.IsDNS1123Label(q.Container)) > 0 {
		errs = append(errs, fmt.Sprintf("container: %q is not a container name", q.Container))
	}
	switch q.Mode {
	case v1alpha1.ModeLive, v1alpha1.ModeCopy, v1alpha1.ModeHeldCopy:
	default:
		errs = append(errs, fmt.Sprintf("mode: %q is not one of live, copy, heldCopy", q.Mode))
	}
	if q.ProcessAccess && q.Container == "" {
		errs = append(errs, "container: process access names the app container whose processes it sees")
	}
	d, err := time.ParseDuration(q.Duration)
	switch {
	case err != nil || !goDuration.MatchString(q.Duration):
		errs = append(errs, fmt.Sprintf("duration: %q is not a duration such as 30m", q.Duration))
	case d < minDuration || d > maxDuration:
		errs = append(errs, fmt.Sprintf("duration: a session lasts from %s to %s, not %s", minDuration, maxDuration, d))
	}
	if r := strings.TrimSpace(q.Reason); r == "" || len(q.Reason) > maxReason {
		errs = append(errs, fmt.Sprintf("reason: say why, in 1 to %d characters", maxReason))
	}
	if len(errs) > 0 {
		return 0, badRequest("%s", strings.Join(errs, "; "))
	}
	return d, nil
}

// targetOf finds the request's cluster and checks the caller may do a in
// its namespace.
func (s *Server) targetOf(r *http.Request, c Caller, a Action) (*target, string, error) {
	t, ok := s.clusters[r.PathValue("cluster")]
	if !ok {
		return nil, "", notFound("no cluster %q is configured", r.PathValue("cluster"))
	}
	ns := r.PathValue("namespace")
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, "", badRequest("%q is not a namespace name", ns)
	}
	if a != "" && !s.cfg.can(c, a, t.Name, ns) {
		return nil, "", forbidden("%s may not %s sessions in %s/%s", c.Name, a, t.Name, ns)
	}
	if a == "" && !s.cfg.sees(c, t.Name, ns) {
		return nil, "", forbidden("%s has no permission in %s/%s", c.Name, t.Name, ns)
	}
	return t, ns, nil
}

// sessionFor is the session the request's path names, for a caller who
// may do a in its namespace ("" for any permission there).
func (s *Server) sessionFor(r *http.Request, c Caller, a Action) (*target, *v1alpha1.Session, error) {
	t, ns, err := s.targetOf(r, c, a)
	if err != nil {
		return nil, nil, err
	}
	name := r.PathValue("name")
	if len(validation.IsDNS1123Label(name)) > 0 {
		return nil, nil, badRequest("%q is not a session name", name)
	}
	sess := &v1alpha1.Session{}
	if err := t.Client.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: name}, sess); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, notFound("no session %s in %s/%s", name, t.Name, ns)
		}
		return nil, nil, err
	}
	return t, sess, nil
}

// clusterError turns the API server's refusal (an admission policy, a
// conflict) into the API's; its message names the policy that refused.
func clusterError(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err):
		return conflict("the session changed meanwhile; reload it and try again")
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err):
		return &apiError{http.StatusForbidden, "RefusedByCluster", err.Error()}
	case errors.Is(err, lifecycle.ErrCannotMove):
		return conflict("%v", err)
	case errors.Is(err, lifecycle.ErrNotAudited):
		return &apiError{http.StatusServiceUnavailable, "AuditUnavailable", err.Error()}
	}
	return err
}

func (s *Server) request(w http.ResponseWriter, r *http.Request, c Caller) error {
	t, ns, err := s.targetOf(r, c, "")
	if err != nil {
		return err
	}
	var q wire.Request
	if err := decode(r, &q); err != nil {
		return err
	}
	d, err := checkRequest(&q)
	if err != nil {
		return err
	}
	action := ActionRequest
	if q.GlassBroken {
		action = ActionBreakGlass
	}
	if !s.cfg.can(c, action, t.Name, ns) {
		return forbidden("%s may not %s sessions in %s/%s", c.Name, action, t.Name, ns)
	}
	if q.Mode == v1alpha1.ModeHeldCopy {
		// Said now, not after someone approved what cannot start.
		if err := debugsession.HeldCopies(t.Kube.Discovery()); errors.Is(err, debugsession.ErrNoHeldCopies) {
			return badRequest("mode: %v", err)
		} else if err != nil {
			return clusterError(err)
		}
	}
	ctx := r.Context()
	sess := &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "s-", Namespace: ns},
		Spec: v1alpha1.SessionSpec{TargetPod: q.Pod, TargetContainer: q.Container, Mode: q.Mode, ProcessAccess: q.ProcessAccess,
			Duration: metav1.Duration{Duration: d}, KeepPod: q.KeepPod, Reason: q.Reason, Requester: c.Name, RequesterID: c.ID, GlassBroken: q.GlassBroken},
	}
	if err := t.Client.Create(ctx, sess); err != nil {
		return clusterError(err)
	}
	now := metav1.NewTime(s.clock.Now())
	move := lifecycle.Move{Step: v1alpha1.StepRequest, To: v1alpha1.PhasePending, Actor: c.Name, Reason: q.Reason}
	note := v1alpha1.NotifyRequestNew
	switch {
	case q.GlassBroken:
		// Nobody approved: the relay says so, and a review falls due.
		move.Step, move.To, note = v1alpha1.StepBreakGlass, v1alpha1.PhaseApproved, v1alpha1.NotifyGlassBroken
		move.Status = func(st *v1alpha1.SessionStatus) {
			st.Approval = &v1alpha1.Approval{Kind: v1alpha1.ApprovalGlassBroken, By: "glass broken by " + c.Name, At: now, Mode: q.Mode,
				ProcessAccess: q.ProcessAccess, KeepPod: q.KeepPod}
			due := metav1.NewTime(now.Add(s.cfg.Limits.ReviewWithin.Duration))
			st.Review = &v1alpha1.Review{DueAt: &due}
		}
	case !t.NeedsApproval():
		move.To = v1alpha1.PhaseApproved
		move.Status = func(st *v1alpha1.SessionStatus) {
			st.Approval = &v1alpha1.Approval{Kind: v1alpha1.ApprovalNotRequired, By: "approval not required on " + t.Name, At: now, Mode: q.Mode,
				ProcessAccess: q.ProcessAccess, KeepPod: q.KeepPod}
		}
	}
	if err := t.runner.Lifecycle().Make(ctx, sess, move); err != nil {
		// A Session without its status would be a half-written request.
		_ = t.Client.Delete(context.WithoutCancel(ctx), sess)
		return clusterError(err)
	}
	s.notify(ctx, notify.Event{Kind: note, Cluster: t.Name}, sess)
	writeJSON(w, http.StatusCreated, s.view(c, t, sess))
	return nil
}

// notify is best effort: a session is never held up by a chat webhook.
func (s *Server) notify(ctx context.Context, e notify.Event, sess *v1alpha1.Session) {
	if s.notifier == nil {
		return
	}
	e.To = notify.To(e.Kind, sess, "")
	if err := s.notifier.Send(context.WithoutCancel(ctx), e, sess); err != nil {
		s.log.Error(err, "notification failed", "kind", e.Kind, "session", sess.Namespace+"/"+sess.Name)
	}
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, c Caller) error {
	wantCluster, wantNS := r.URL.Query().Get("cluster"), r.URL.Query().Get("namespace")
	out := []wire.SessionView{}
	for name, t := range s.clusters {
		if wantCluster != "" && wantCluster != name {
			continue
		}
		var opts []client.ListOption
		if wantNS != "" {
			opts = append(opts, client.InNamespace(wantNS))
		}
		list := &v1alpha1.SessionList{}
		if err := t.Client.List(r.Context(), list, opts...); err != nil {
			return fmt.Errorf("listing sessions on %s: %w", name, err)
		}
		for i := range list.Items {
			if s.cfg.sees(c, name, list.Items[i].Namespace) {
				out = append(out, s.view(c, t, &list.Items[i]))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created.Time) })
	writeJSON(w, http.StatusOK, map[string][]wire.SessionView{"sessions": out})
	return nil
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, c Caller) error {
	t, sess, err := s.sessionFor(r, c, "")
	if err != nil {
		return err
	}
	v := s.view(c, t, sess)
	if sess.Status.Phase == v1alpha1.PhaseActive {
		key := sessionKey{t.Name, sess.Namespace, sess.Name}
		// Its countdowns are counted where it runs.
		if s.held(key) == nil && s.passOn(w, r, sess) {
			return nil
		}
		v.Live = s.liveView(key)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) decide(r *http.Request, c Caller) (*target, *v1alpha1.Session, wire.Decision, error) {
	var d wire.Decision
	if err := decode(r, &d); err != nil {
		return nil, nil, d, err
	}
	if len(d.Comment) > maxReason || len(d.Reason) > maxReason {
		return nil, nil, d, badRequest("comment and reason are at most %d characters", maxReason)
	}
	t, sess, err := s.sessionFor(r, c, ActionApprove)
	if err != nil {
		return nil, nil, d, err
	}
	if err := s.standingOf(c, t, sess).mayDecide(sess); err != nil {
		return nil, nil, d, err
	}
	return t, sess, d, nil
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request, c Caller) error {
	t, sess, d, err := s.decide(r, c)
	if err != nil {
		return err
	}
	ctx := r.Context()
	approval := &v1alpha1.Approval{Kind: v1alpha1.ApprovalPerson, By: c.Name, ByID: c.ID, At: metav1.NewTime(s.clock.Now()), Mode: sess.Spec.Mode,
		ProcessAccess: sess.Spec.ProcessAccess && !d.WithoutProcessAccess, KeepPod: d.KeepPod, Comment: d.Comment}
	what := fmt.Sprintf("mode %s, process access %t, keep the pod %t", sess.Spec.Mode, approval.ProcessAccess, d.KeepPod)
	if err := t.runner.Lifecycle().Make(ctx, sess, lifecycle.Move{Step: v1alpha1.StepApprove, To: v1alpha1.PhaseApproved,
		Actor: c.Name, Reason: what, Status: func(st *v1alpha1.SessionStatus) { st.Approval = approval }}); err != nil {
		return clusterError(err)
	}
	s.notify(ctx, notify.Event{Kind: v1alpha1.NotifyRequestApproved, Cluster: t.Name}, sess)
	writeJSON(w, http.StatusOK, s.view(c, t, sess))
	return nil
}

func (s *Server) deny(w http.ResponseWriter, r *http.Request, c Caller) error {
	t, sess, d, err := s.decide(r, c)
	if err != nil {
		return err
	}
	ctx := r.Context()
	denial := &v1alpha1.Denial{By: c.Name, ByID: c.ID, At: metav1.NewTime(s.clock.Now()), Reason: d.Reason}
	if err := t.runner.Lifecycle().Make(ctx, sess, lifecycle.Move{Step: v1alpha1.StepDeny, To: v1alpha1.PhaseDenied,
		Actor: c.Name, Reason: d.Reason, Status: func(st *v1alpha1.SessionStatus) { st.Denial = denial }}); err != nil {
		return clusterError(err)
	}
	s.notify(ctx, notify.Event{Kind: v1alpha1.NotifyRequestDenied, Cluster: t.Name}, sess)
	writeJSON(w, http.StatusOK, s.view(c, t, sess))
	return nil
}

func (s *Server) review(w http.ResponseWriter, r *http.Request, c Caller) error {
	var q wire.Review
	if err := decode(r, &q); err != nil {
		return err
	}
	if strings.TrimSpace(q.Comment) == "" || len(q.Comment) > maxReason {
		return badRequest("comment: say what you found, in 1 to %d characters", maxReason)
	}
	ctx := r.Context()
	t, sess, err := s.sessionFor(r, c, ActionReview)
	if err != nil {
		return err
	}
	if err := s.standingOf(c, t, sess).mayReview(sess); err != nil {
		return err
	}
	at := metav1.NewTime(s.clock.Now())
	if err := t.runner.Lifecycle().Make(ctx, sess, lifecycle.Move{Step: v1alpha1.StepReview, Actor: c.Name, Reason: q.Comment,
		Status: func(st *v1alpha1.SessionStatus) {
			if st.Review == nil {
				st.Review = &v1alpha1.Review{}
			}
			st.Review.By, st.Review.ByID, st.Review.At, st.Review.Comment = c.Name, c.ID, &at, q.Comment
		}}); err != nil {
		return clusterError(err)
	}
	writeJSON(w, http.StatusOK, s.view(c, t, sess))
	return nil
}

// errNotHere is an Active session this relay does not hold, e.g. after a
// restart: the sweeper ends it once its heartbeat is stale.
var errNotHere = errors.New("the session is Active but not held by this relay; the sweeper ends it once its heartbeat goes stale")
