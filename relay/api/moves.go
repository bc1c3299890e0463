package api

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/wire"
)

// Where is what the moves read of the cluster a session is asked on.
type Where struct {
	Cluster string
	// NeedsApproval: a second person approves sessions here.
	NeedsApproval bool
	// ReviewWithin is how soon a broken glass is reviewed.
	ReviewWithin time.Duration
}

// Requested is what c's checked request q, for d, makes in namespace ns:
// the Session to create, the move that gives it its first status, and the
// notification. A broken glass is approved by nobody and falls due for
// review; where no approval is needed the cluster says so in the approval.
func Requested(c Caller, q *wire.Request, d time.Duration, ns string, at Where, now time.Time) (*v1alpha1.Session, lifecycle.Move, string) {
	sess := &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "s-", Namespace: ns},
		Spec: v1alpha1.SessionSpec{TargetPod: q.Pod, TargetContainer: q.Container, Mode: q.Mode, ProcessAccess: q.ProcessAccess,
			Duration: metav1.Duration{Duration: d}, KeepPod: q.KeepPod, Reason: q.Reason, Requester: c.Name, RequesterID: c.ID, GlassBroken: q.GlassBroken},
	}
	stamp := metav1.NewTime(now)
	approval := func(kind v1alpha1.ApprovalKind, by string) *v1alpha1.Approval {
		return &v1alpha1.Approval{Kind: kind, By: by, At: stamp, Mode: q.Mode, ProcessAccess: q.ProcessAccess, KeepPod: q.KeepPod}
	}
	move := lifecycle.Move{Step: v1alpha1.StepRequest, To: v1alpha1.PhasePending, Actor: c.Name, Reason: q.Reason}
	note := v1alpha1.NotifyRequestNew
	switch {
	case q.GlassBroken:
		move.Step, move.To, note = v1alpha1.StepBreakGlass, v1alpha1.PhaseApproved, v1alpha1.NotifyGlassBroken
		move.Status = func(st *v1alpha1.SessionStatus) {
			st.Approval = approval(v1alpha1.ApprovalGlassBroken, "glass broken by "+c.Name)
			due := metav1.NewTime(now.Add(at.ReviewWithin))
			st.Review = &v1alpha1.Review{DueAt: &due}
		}
	case !at.NeedsApproval:
		move.To = v1alpha1.PhaseApproved
		move.Status = func(st *v1alpha1.SessionStatus) {
			st.Approval = approval(v1alpha1.ApprovalNotRequired, "approval not required on "+at.Cluster)
		}
	}
	return sess, move, note
}

// Approved is c's approval of sess as decided in d: what the approver
// chose to grant, which never widens what was asked.
func Approved(c Caller, sess *v1alpha1.Session, d *wire.Decision, now time.Time) lifecycle.Move {
	approval := &v1alpha1.Approval{Kind: v1alpha1.ApprovalPerson, By: c.Name, ByID: c.ID, At: metav1.NewTime(now), Mode: sess.Spec.Mode,
		ProcessAccess: sess.Spec.ProcessAccess && !d.WithoutProcessAccess, KeepPod: d.KeepPod, Comment: d.Comment}
	what := fmt.Sprintf("mode %s, process access %t, keep the pod %t", sess.Spec.Mode, approval.ProcessAccess, d.KeepPod)
	return lifecycle.Move{Step: v1alpha1.StepApprove, To: v1alpha1.PhaseApproved, Actor: c.Name, Reason: what,
		Status: func(st *v1alpha1.SessionStatus) { st.Approval = approval }}
}

// Denied is c's denial as decided in d.
func Denied(c Caller, d *wire.Decision, now time.Time) lifecycle.Move {
	denial := &v1alpha1.Denial{By: c.Name, ByID: c.ID, At: metav1.NewTime(now), Reason: d.Reason}
	return lifecycle.Move{Step: v1alpha1.StepDeny, To: v1alpha1.PhaseDenied, Actor: c.Name, Reason: d.Reason,
		Status: func(st *v1alpha1.SessionStatus) { st.Denial = denial }}
}

// EndedUnstarted is c's end, for reason and with c's words (note), of a
// session that never started: nothing to take back but the request.
func EndedUnstarted(c Caller, reason v1alpha1.EndReason, note string, now time.Time) lifecycle.Move {
	end := &v1alpha1.End{By: c.Name, Reason: reason, Note: note, At: metav1.NewTime(now)}
	return lifecycle.Move{Step: v1alpha1.StepEnd, To: v1alpha1.PhaseEnded, Actor: c.Name,
		Reason: "before it started: " + debugsession.EndReasonText(reason, note), Status: func(st *v1alpha1.SessionStatus) { st.End = end }}
}

// Reviewed is c's review: it keeps the due date a broken glass set.
func Reviewed(c Caller, q *wire.Review, now time.Time) lifecycle.Move {
	at := metav1.NewTime(now)
	return lifecycle.Move{Step: v1alpha1.StepReview, Actor: c.Name, Reason: q.Comment,
		Status: func(st *v1alpha1.SessionStatus) {
			if st.Review == nil {
				st.Review = &v1alpha1.Review{}
			}
			st.Review.By, st.Review.ByID, st.Review.At, st.Review.Comment = c.Name, c.ID, &at, q.Comment
		}}
}
