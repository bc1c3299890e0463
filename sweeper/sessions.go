package sweeper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/lifecycle"
)

// Notifier tells people things; the sweeper tells the fallback reviewer
// that a glass-broken session's review is overdue.
type Notifier interface {
	ReviewOverdue(ctx context.Context, s *v1alpha1.Session) error
}

// EvidenceFinalizer assembles what a session's recorder streamed into a
// finished recording, for a session that ended without the relay, and says
// what the Session should record of it.
type EvidenceFinalizer interface {
	Finalize(ctx context.Context, s *v1alpha1.Session) (*v1alpha1.Evidence, error)
}

// EvidenceAnchorer anchors a finalized recording in the transparency log
// and returns the Session's evidence naming the entry.
type EvidenceAnchorer interface {
	Anchor(ctx context.Context, s *v1alpha1.Session) (*v1alpha1.Evidence, error)
}

// SessionSweeper finishes what the relay left: sessions past their hard
// stop or whose relay heartbeat went stale, debug containers still in pods
// of ended sessions, and overdue reviews.
type SessionSweeper struct {
	Client client.Client
	// Kube records an Event on the Session for each move, for kubectl
	// users (optional; the audit log is the record).
	Kube kubernetes.Interface
	// Audit receives every move the sweeper makes, before it is made.
	Audit *audit.Log
	// Reader reads pods straight from the API server: the session sweeper
	// needs whole pods, which the pod sweeper's slim cache does not hold.
	Reader client.Reader
	Clock  clock.PassiveClock
	// Identity names the sweeper in the Session's end record.
	Identity string
	// HeartbeatTimeout is how stale the relay's heartbeat may get before the
	// session counts as abandoned.
	HeartbeatTimeout time.Duration
	// Grace lets the relay end a session at its hard stop before the sweeper does.
	Grace time.Duration
	// ReviewWithin is when a glass-broken session's review falls due, from its request.
	ReviewWithin time.Duration
	// PendingFor and ApprovedFor are how long a request waits for a
	// decision, and an approval for its start, before the session expires:
	// mid-incident, a yes given an hour ago is not a yes for now.
	PendingFor, ApprovedFor time.Duration
	Notifier                Notifier
	Evidence                EvidenceFinalizer
	Anchors                 EvidenceAnchorer
	AnchorAfter             time.Duration
}

// action is what the sweeper does about a Session now.
type action struct {
	end     bool
	expire  bool
	why     string
	recycle bool // the session ended: make sure its debug container is gone
	// finalize: the session ran and ended without evidence (the store was
	// away when it ended): build it from the segments streamed.
	finalize  bool
	notify    bool
	anchor    bool
	setDueAt  *time.Time
	requeueIn time.Duration
}

// decide is the sweeper's whole judgement on a Session, without I/O.
func (s *SessionSweeper) decide(sess *v1alpha1.Session, now time.Time) action {
	var a action
	soonest := func(at time.Time) {
		if d := at.Sub(now); d > 0 && (a.requeueIn == 0 || d < a.requeueIn) {
			a.requeueIn = d
		}
	}
	st := sess.Status
	switch st.Phase {
	case v1alpha1.PhaseActive:
		deadline := sessionDeadline(sess)
		switch {
		case !deadline.IsZero() && !now.Before(deadline.Add(s.Grace)):
			a.end, a.why = true, "past its hard stop"
		case st.Heartbeat != nil && !now.Before(st.Heartbeat.Add(s.HeartbeatTimeout)):
			a.end, a.why = true, "the relay's heartbeat is stale"
		case st.Heartbeat == nil && st.StartedAt != nil && !now.Before(st.StartedAt.Add(s.HeartbeatTimeout)):
			a.end, a.why = true, "the relay never sent a heartbeat"
		default:
			if !deadline.IsZero() {
				soonest(deadline.Add(s.Grace))
			}
			if st.Heartbeat != nil {
				soonest(st.Heartbeat.Add(s.HeartbeatTimeout))
			} else if st.StartedAt != nil {
				soonest(st.StartedAt.Add(s.HeartbeatTimeout))
			}
		}
	case v1alpha1.PhasePending, v1alpha1.PhaseApproved:
		// A request waits for a decision from its creation, an approval for
		// its start from the moment it was approved.
		due := sess.CreationTimestamp.Add(s.PendingFor)
		if st.Phase == v1alpha1.PhaseApproved {
			from := sess.CreationTimestamp.Time
			if st.Approval != nil {
				from = st.Approval.At.Time
			}
			due = from.Add(s.ApprovedFor)
		}
		if now.Before(due) {
			soonest(due)
		} else {
			a.expire, a.why = true, "not started within "+s.ApprovedFor.String()+" of its approval"
			if st.Phase == v1alpha1.PhasePending {
				a.why = "no decision within " + s.PendingFor.String()
			}
		}
	default:
		if !st.Phase.Final() {
			break
		}
		// Whatever it was left with goes: a Denied session has nothing, and
		// finding so costs a list.
		a.recycle = true
		a.finalize = s.Evidence != nil && st.Evidence == nil && st.StartedAt != nil && st.End != nil
		if ev := st.Evidence; s.Anchors != nil && ev != nil && ev.AnchorPending && st.End != nil {
			if due := st.End.At.Add(s.AnchorAfter); now.Before(due) {
				soonest(due)
			} else {
				a.anchor = true
			}
		}
	}
	// A Session without a phase is the relay's, between its create and its
	// first status write (which sets the due date of a glass-broken one):
	// writing it here first would make that write conflict, and the relay
	// withdraw the emergency request. Nothing has been granted for it yet.
	if sess.Spec.GlassBroken && st.Phase != "" && (st.Review == nil || st.Review.By == "") {
		switch {
		case st.Review == nil || st.Review.DueAt == nil:
			due := sess.CreationTimestamp.Add(s.ReviewWithin)
			a.setDueAt = &due
			soonest(due)
		case st.Review.FallbackNotified:
		case !now.Before(st.Review.DueAt.Time):
			a.notify = true
		default:
			soonest(st.Review.DueAt.Time)
		}
	}
	return a
}

func sessionDeadline(s *v1alpha1.Session) time.Time {
	if s.Status.Deadline != nil {
		return s.Status.Deadline.Time
	}
	if s.Status.StartedAt != nil {
		return s.Status.StartedAt.Add(s.Spec.Duration.Duration)
	}
	return time.Time{}
}

// Reconcile handles one Session.
func (s *SessionSweeper) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sess := &v1alpha1.Session{}
	if err := s.Client.Get(ctx, req.NamespacedName, sess); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	logger := log.FromContext(ctx).WithValues("session", req.NamespacedName)
	now := s.Clock.Now()
	a := s.decide(sess, now)
	if a.end {
		logger.Info("ending an abandoned session", "why", a.why)
		if err := s.end(ctx, sess, now, a.why); err != nil {
			return ctrl.Result{}, err
		}
		a = s.decide(sess, now)
	}
	if a.expire {
		logger.Info("a session expired", "why", a.why)
		if err := s.expireSession(ctx, sess, a.why); err != nil {
			return ctrl.Result{}, err
		}
		a = s.decide(sess, now)
	}
	if a.recycle {
		if err := s.cleanUp(ctx, sess); err != nil {
			return ctrl.Result{}, err
		}
	}
	if a.finalize {
		if err := s.finalize(ctx, sess); err != nil {
			// The store may be away (why the relay could not finalize it):
			// tried again until it is back.
			logger.Info("the recording's evidence is still to be finalized", "error", err.Error())
			return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
		}
		logger.Info("finalized the evidence of a session that ended without it")
		a = s.decide(sess, now)
	}
	if a.setDueAt != nil || a.notify {
		if err := s.review(ctx, sess, a); err != nil {
			return ctrl.Result{}, err
		}
	}
	if a.anchor {
		ev, err := s.Anchors.Anchor(ctx, sess)
		if err != nil {
			// The log may be down: the anchor stays pending, and is tried again.
			logger.Info("the recording's anchor is still pending", "error", err.Error())
			return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
		}
		if err := s.lifecycle().Make(ctx, sess, lifecycle.Move{Step: v1alpha1.StepAnchor, Actor: s.Identity, Reason: ev.EntryID,
			Status: func(st *v1alpha1.SessionStatus) { st.Evidence = ev }}); err != nil {
			return ctrl.Result{}, err
		}
		logger.Info("anchored the recording", "entry", ev.EntryID)
	}
	return ctrl.Result{RequeueAfter: a.requeueIn}, nil
}

// expireSession marks a request nobody decided on, or an approval nobody
// used, Expired: the relay starts only Approved sessions, so it never starts.
func (s *SessionSweeper) expireSession(ctx context.Context, sess *v1alpha1.Session, why string) error {
	if err := s.lifecycle().Make(ctx, sess, lifecycle.Move{Step: v1alpha1.StepExpire, To: v1alpha1.PhaseExpired, Actor: s.Identity, Reason: why}); err != nil {
		return fmt.Errorf("recording the expiry of %s/%s: %w", sess.Namespace, sess.Name, err)
	}
	return nil
}

// lifecycle is the Session state machine as the sweeper.
func (s *SessionSweeper) lifecycle() *lifecycle.Machine {
	return &lifecycle.Machine{Client: s.Client, Kube: s.Kube, Writer: v1alpha1.WriterSweeper, Component: s.Identity, Audit: s.Audit, Clock: s.Clock}
}

// end records the end first, so a crash half-way leaves an Ended session
// whose clean-up the next pass finishes.
func (s *SessionSweeper) end(ctx context.Context, sess *v1alpha1.Session, now time.Time, why string) error {
	end := &v1alpha1.End{By: s.Identity, Reason: v1alpha1.EndSwept, Detail: v1alpha1.EndDetail(why), At: metav1.NewTime(now), Abnormal: true}
	if err := s.lifecycle().Make(ctx, sess, lifecycle.Move{Step: v1alpha1.StepEnd, To: v1alpha1.PhaseEnded, Actor: s.Identity, Reason: why,
		Status: func(st *v1alpha1.SessionStatus) { st.End = end }}); err != nil {
		return fmt.Errorf("recording the end of %s/%s: %w", sess.Namespace, sess.Name, err)
	}
	if s.Evidence != nil {
		if err := s.finalize(ctx, sess); err != nil {
			// The recording stays in its write-once segments: the next
			// pass finalizes it (decide: finalize).
			log.FromContext(ctx).Error(err, "finalizing the evidence of a swept session", "session", sess.Name)
		}
	}
	return nil
}

// finalize builds an ended session's evidence from the segments its relay
// streamed, and records it on the Session.
func (s *SessionSweeper) finalize(ctx context.Context, sess *v1alpha1.Session) error {
	ev, err := s.Evidence.Finalize(ctx, sess)
	if err != nil {
		return err
	}
	if err := s.lifecycle().Make(ctx, sess, lifecycle.Move{Step: v1alpha1.StepEvidence, Actor: s.Identity, Reason: "finalized from the segments streamed: " + ev.ManifestSHA256,
		Status: func(st *v1alpha1.SessionStatus) { st.Evidence = ev }}); err != nil {
		return fmt.Errorf("recording the evidence of %s/%s: %w", sess.Namespace, sess.Name, err)
	}
	return nil
}

// cleanUp makes an ended session leave nothing behind: its grants, its
// copies, and its debug container in the target pod (by recycling the pod)
// unless the approver chose to keep the pod.
func (s *SessionSweeper) cleanUp(ctx context.Context, sess *v1alpha1.Session) error {
	var errs []error
	grants := &rbacv1.RoleBindingList{}
	if err := s.Client.List(ctx, grants, client.InNamespace(sess.Namespace), client.MatchingLabels{v1alpha1.SessionLabel: sess.Name}); err != nil {
		errs = append(errs, err)
	}
	for i := range grants.Items {
		errs = append(errs, ignoreGone(s.Client.Delete(ctx, &grants.Items[i])))
	}
	copies := &corev1.PodList{}
	if err := s.Reader.List(ctx, copies, client.InNamespace(sess.Namespace), client.MatchingLabels{v1alpha1.SessionLabel: sess.Name}); err != nil {
		errs = append(errs, err)
	}
	for i := range copies.Items {
		errs = append(errs, ignoreGone(s.Client.Delete(ctx, &copies.Items[i])))
	}
	if dc := sess.Status.DebugContainer; dc != nil && sess.Spec.Mode == v1alpha1.ModeLive && !sess.KeepsPod() {
		pod := &corev1.Pod{}
		err := s.Reader.Get(ctx, types.NamespacedName{Namespace: sess.Namespace, Name: dc.Pod}, pod)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, err)
		case carries(pod, dc.Name):
			uid := pod.UID
			errs = append(errs, ignoreGone(s.Client.Delete(ctx, pod, client.Preconditions{UID: &uid})))
			log.FromContext(ctx).Info("recycled a pod that still carried a debug container", "pod", pod.Name, "container", dc.Name)
		}
	}
	return errors.Join(errs...)
}

func carries(pod *corev1.Pod, container string) bool {
	for _, ec := range pod.Spec.EphemeralContainers {
		if ec.Name == container && strings.HasPrefix(ec.Name, v1alpha1.DebugContainerPrefix) {
			return true
		}
	}
	return false
}

func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

func (s *SessionSweeper) review(ctx context.Context, sess *v1alpha1.Session, a action) error {
	why := "review due"
	if a.notify {
		if s.Notifier == nil {
			return errors.New("a review is overdue and no fallback reviewer is configured")
		}
		if err := s.Notifier.ReviewOverdue(ctx, sess); err != nil {
			return fmt.Errorf("telling the fallback reviewer about %s/%s: %w", sess.Namespace, sess.Name, err)
		}
		why = "review overdue: the fallback reviewer was told"
	}
	return s.lifecycle().Make(ctx, sess, lifecycle.Move{Step: v1alpha1.StepReviewDue, Actor: s.Identity, Reason: why,
		Status: func(st *v1alpha1.SessionStatus) {
			if st.Review == nil {
				st.Review = &v1alpha1.Review{}
			}
			if a.setDueAt != nil {
				due := metav1.NewTime(*a.setDueAt)
				st.Review.DueAt = &due
			}
			st.Review.FallbackNotified = st.Review.FallbackNotified || a.notify
		}})
}

// Judgement is the sweeper's decision on a Session at a moment, as decide
// makes it: what the lifecycle's exhaustive check (relay/lifecycle_model_test.go)
// takes as the sweeper's moves, so that the model runs its rules, not a copy.
type Judgement struct {
	End, Expire, Recycle, Finalize, NotifyFallback, Anchor bool
	// SetDueAt is a glass-broken session's review due date to record.
	SetDueAt *time.Time
	// RequeueIn is when the sweeper looks again, if nothing changes first.
	RequeueIn time.Duration
}

// Judge is decide's verdict on sess at now.
func (s *SessionSweeper) Judge(sess *v1alpha1.Session, now time.Time) Judgement {
	a := s.decide(sess, now)
	return Judgement{End: a.end, Expire: a.expire, Recycle: a.recycle, Finalize: a.finalize, NotifyFallback: a.notify,
		Anchor: a.anchor, SetDueAt: a.setDueAt, RequeueIn: a.requeueIn}
}
