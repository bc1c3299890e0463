package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/notify"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/wire"
)

// Cluster is one cluster whose sessions the API serves.
type Cluster struct {
	Name   string
	Client client.Client
	// Kube answers whether the cluster can hold a copy (discovery).
	Kube kubernetes.Interface
	// NeedsApproval: a second person approves sessions here.
	NeedsApproval bool
	// Moderates says whether sessions in a namespace need a moderator.
	Moderates func(namespace string) bool
	// Lifecycle makes each move as the portal: audited, then written.
	Lifecycle *lifecycle.Machine
}

// Notifier tells people about sessions.
type Notifier interface {
	Send(ctx context.Context, e notify.Event, s *v1alpha1.Session) error
}

// Running is what the relay's live side says of sessions it runs.
type Running interface {
	// Watching says whether name watches sess's terminal; true where this
	// relay does not run it, for the replica that does judges again.
	Watching(cluster string, sess *v1alpha1.Session, name string) bool
	// Live is the countdowns and people of Active sess, counted where it
	// runs: passed, the request was answered by the replica running it.
	Live(w http.ResponseWriter, r *http.Request, cluster string, sess *v1alpha1.Session) (v *wire.LiveView, passed bool)
}

// Sessions serves the decisions on sessions: request, read, approve,
// deny, review.
type Sessions struct {
	Clusters    map[string]*Cluster
	Permissions Permissions
	// ReviewWithin is how soon a broken glass is reviewed.
	ReviewWithin time.Duration
	Clock        clock.PassiveClock
	// Notifier may be nil: no notifications.
	Notifier Notifier
	Running  Running
	Log      logr.Logger
}

// Handler is one endpoint's work for an authenticated caller; its error
// is the answer (an *Error, or an internal failure).
type Handler func(w http.ResponseWriter, r *http.Request, c Caller) error

// StandingOf is c toward sess on cl, as this relay knows it now.
func (s *Sessions) StandingOf(c Caller, cl *Cluster, sess *v1alpha1.Session) Standing {
	ns := sess.Namespace
	return Standing{Caller: c, Cluster: cl.Name, Can: func(a Action) bool { return s.Permissions.Can(c, a, cl.Name, ns) },
		Moderated: cl.Moderates(ns), Watching: s.Running.Watching(cl.Name, sess, c.Name)}
}

// View is sess as c sees it on cl: with what c may do to it now.
func (s *Sessions) View(c Caller, cl *Cluster, sess *v1alpha1.Session) wire.SessionView {
	return wire.SessionView{Cluster: cl.Name, Namespace: sess.Namespace, Name: sess.Name, Created: sess.CreationTimestamp,
		Spec: sess.Spec, Status: sess.Status, May: s.StandingOf(c, cl, sess).Offers(sess)}
}

// ClusterOf finds the request's cluster and namespace, for a caller who
// may do a there ("" for any permission there).
func (s *Sessions) ClusterOf(r *http.Request, c Caller, a Action) (*Cluster, string, error) {
	cl, ok := s.Clusters[r.PathValue("cluster")]
	if !ok {
		return nil, "", NotFound("no cluster %q is configured", r.PathValue("cluster"))
	}
	ns := r.PathValue("namespace")
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, "", BadRequest("%q is not a namespace name", ns)
	}
	if a != "" && !s.Permissions.Can(c, a, cl.Name, ns) {
		return nil, "", notPermitted(c, a, cl.Name, ns)
	}
	if a == "" && !s.Permissions.Sees(c, cl.Name, ns) {
		return nil, "", Forbidden("%s has no permission in %s/%s", c.Name, cl.Name, ns)
	}
	return cl, ns, nil
}

// SessionFor is the session the request's path names, for a caller who
// may do a in its namespace ("" for any permission there).
func (s *Sessions) SessionFor(r *http.Request, c Caller, a Action) (*Cluster, *v1alpha1.Session, error) {
	cl, ns, err := s.ClusterOf(r, c, a)
	if err != nil {
		return nil, nil, err
	}
	name := r.PathValue("name")
	if len(validation.IsDNS1123Label(name)) > 0 {
		return nil, nil, BadRequest("%q is not a session name", name)
	}
	sess := &v1alpha1.Session{}
	if err := cl.Client.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: name}, sess); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, NotFound("no session %s in %s/%s", name, cl.Name, ns)
		}
		return nil, nil, err
	}
	return cl, sess, nil
}

// Notify is best effort: a session is never held up by a chat webhook.
func (s *Sessions) Notify(ctx context.Context, cluster, kind string, sess *v1alpha1.Session) {
	if s.Notifier == nil {
		return
	}
	e := notify.Event{Kind: kind, Cluster: cluster, To: notify.To(kind, sess, "")}
	if err := s.Notifier.Send(context.WithoutCancel(ctx), e, sess); err != nil {
		s.Log.Error(err, "notification failed", "kind", kind, "session", sess.Namespace+"/"+sess.Name)
	}
}

// Request asks for a session, or breaks the glass.
func (s *Sessions) Request(w http.ResponseWriter, r *http.Request, c Caller) error {
	cl, ns, err := s.ClusterOf(r, c, "")
	if err != nil {
		return err
	}
	var q wire.Request
	if err := Decode(r, &q); err != nil {
		return err
	}
	d, err := CheckRequest(&q)
	if err != nil {
		return err
	}
	if need := AskedWith(q.GlassBroken); !s.Permissions.Can(c, need, cl.Name, ns) {
		return notPermitted(c, need, cl.Name, ns)
	}
	if q.Mode == v1alpha1.ModeHeldCopy {
		// Said now, not after someone approved what cannot start.
		if err := debugsession.HeldCopies(cl.Kube.Discovery()); errors.Is(err, debugsession.ErrNoHeldCopies) {
			return BadRequest("mode: %v", err)
		} else if err != nil {
			return ClusterError(err)
		}
	}
	ctx := r.Context()
	sess, move, note := Requested(c, &q, d, ns, Where{Cluster: cl.Name, NeedsApproval: cl.NeedsApproval, ReviewWithin: s.ReviewWithin}, s.Clock.Now())
	if err := cl.Client.Create(ctx, sess); err != nil {
		return ClusterError(err)
	}
	if err := cl.Lifecycle.Make(ctx, sess, move); err != nil {
		// A Session without its status would be a half-written request.
		_ = cl.Client.Delete(context.WithoutCancel(ctx), sess)
		return ClusterError(err)
	}
	s.Notify(ctx, cl.Name, note, sess)
	WriteJSON(w, http.StatusCreated, s.View(c, cl, sess))
	return nil
}

// List is the sessions the caller sees, newest first.
func (s *Sessions) List(w http.ResponseWriter, r *http.Request, c Caller) error {
	wantCluster, wantNS := r.URL.Query().Get("cluster"), r.URL.Query().Get("namespace")
	out := []wire.SessionView{}
	for name, cl := range s.Clusters {
		if wantCluster != "" && wantCluster != name {
			continue
		}
		var opts []client.ListOption
		if wantNS != "" {
			opts = append(opts, client.InNamespace(wantNS))
		}
		list := &v1alpha1.SessionList{}
		if err := cl.Client.List(r.Context(), list, opts...); err != nil {
			return fmt.Errorf("listing sessions on %s: %w", name, err)
		}
		for i := range list.Items {
			if s.Permissions.Sees(c, name, list.Items[i].Namespace) {
				out = append(out, s.View(c, cl, &list.Items[i]))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created.Time) })
	WriteJSON(w, http.StatusOK, map[string][]wire.SessionView{"sessions": out})
	return nil
}

// Get is one session, with its countdowns while it runs.
func (s *Sessions) Get(w http.ResponseWriter, r *http.Request, c Caller) error {
	cl, sess, err := s.SessionFor(r, c, "")
	if err != nil {
		return err
	}
	v := s.View(c, cl, sess)
	if sess.Status.Phase == v1alpha1.PhaseActive {
		live, passed := s.Running.Live(w, r, cl.Name, sess)
		if passed {
			return nil
		}
		v.Live = live
	}
	WriteJSON(w, http.StatusOK, v)
	return nil
}

// decision is the pending session a decision is on, and its words.
func (s *Sessions) decision(r *http.Request, c Caller) (*Cluster, *v1alpha1.Session, *wire.Decision, error) {
	var d wire.Decision
	if err := Decode(r, &d); err != nil {
		return nil, nil, nil, err
	}
	if err := CheckDecision(&d); err != nil {
		return nil, nil, nil, err
	}
	cl, sess, err := s.SessionFor(r, c, ActionApprove)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := s.StandingOf(c, cl, sess).MayDecide(sess); err != nil {
		return nil, nil, nil, err
	}
	return cl, sess, &d, nil
}

// Approve approves a pending request, granting what the approver chose.
func (s *Sessions) Approve(w http.ResponseWriter, r *http.Request, c Caller) error {
	cl, sess, d, err := s.decision(r, c)
	if err != nil {
		return err
	}
	return s.move(w, r, c, cl, sess, Approved(c, sess, d, s.Clock.Now()), v1alpha1.NotifyRequestApproved)
}

// Deny denies a pending request.
func (s *Sessions) Deny(w http.ResponseWriter, r *http.Request, c Caller) error {
	cl, sess, d, err := s.decision(r, c)
	if err != nil {
		return err
	}
	return s.move(w, r, c, cl, sess, Denied(c, d, s.Clock.Now()), v1alpha1.NotifyRequestDenied)
}

// Review records another person's review of a session that will not run
// again.
func (s *Sessions) Review(w http.ResponseWriter, r *http.Request, c Caller) error {
	var q wire.Review
	if err := Decode(r, &q); err != nil {
		return err
	}
	if err := CheckReview(&q); err != nil {
		return err
	}
	cl, sess, err := s.SessionFor(r, c, ActionReview)
	if err != nil {
		return err
	}
	if err := s.StandingOf(c, cl, sess).MayReview(sess); err != nil {
		return err
	}
	return s.move(w, r, c, cl, sess, Reviewed(c, &q, s.Clock.Now()), "")
}

// move makes m on sess, tells whom note is for ("" for nobody) and answers
// with the session as it now is.
func (s *Sessions) move(w http.ResponseWriter, r *http.Request, c Caller, cl *Cluster, sess *v1alpha1.Session, m lifecycle.Move, note string) error {
	ctx := r.Context()
	if err := cl.Lifecycle.Make(ctx, sess, m); err != nil {
		return ClusterError(err)
	}
	if note != "" {
		s.Notify(ctx, cl.Name, note, sess)
	}
	WriteJSON(w, http.StatusOK, s.View(c, cl, sess))
	return nil
}
