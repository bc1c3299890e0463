package api

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

var (
	moveNow    = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	moveAlice  = Caller{ID: "iss#alice", Name: "alice@example.com"}
	moveBob    = Caller{ID: "iss#bob", Name: "bob@example.com"}
	moveFlight = Where{Cluster: "prod", NeedsApproval: true, ReviewWithin: 24 * time.Hour}
)

// statusAfter is the status a move leaves on a Session that had none.
func statusAfter(m func(*v1alpha1.SessionStatus)) v1alpha1.SessionStatus {
	var st v1alpha1.SessionStatus
	if m != nil {
		m(&st)
	}
	return st
}

// TestRequested: what a request makes, by cluster and by how it is asked.
func TestRequested(t *testing.T) {
	stamp := metav1.NewTime(moveNow)
	due := metav1.NewTime(moveNow.Add(24 * time.Hour))
	ask := wire.Request{Pod: "web-1", Container: "app", Mode: v1alpha1.ModeCopy, ProcessAccess: true, KeepPod: true, Duration: "30m", Reason: "500s"}
	glass := ask
	glass.GlassBroken = true
	ground := Where{Cluster: "dev", NeedsApproval: false, ReviewWithin: time.Hour}
	for name, tc := range map[string]struct {
		q          wire.Request
		at         Where
		step, note string
		to         v1alpha1.SessionPhase
		status     v1alpha1.SessionStatus
	}{
		"a person decides on flight": {ask, moveFlight, v1alpha1.StepRequest, v1alpha1.NotifyRequestNew, v1alpha1.PhasePending, v1alpha1.SessionStatus{}},
		"no approval needed on ground": {ask, ground, v1alpha1.StepRequest, v1alpha1.NotifyRequestNew, v1alpha1.PhaseApproved, v1alpha1.SessionStatus{
			Approval: &v1alpha1.Approval{Kind: v1alpha1.ApprovalNotRequired, By: "approval not required on dev", At: stamp,
				Mode: v1alpha1.ModeCopy, ProcessAccess: true, KeepPod: true}}},
		"a broken glass is approved by nobody and falls due": {glass, moveFlight, v1alpha1.StepBreakGlass, v1alpha1.NotifyGlassBroken, v1alpha1.PhaseApproved, v1alpha1.SessionStatus{
			Approval: &v1alpha1.Approval{Kind: v1alpha1.ApprovalGlassBroken, By: "glass broken by alice@example.com", At: stamp,
				Mode: v1alpha1.ModeCopy, ProcessAccess: true, KeepPod: true},
			Review: &v1alpha1.Review{DueAt: &due}}},
	} {
		t.Run(name, func(t *testing.T) {
			sess, move, note := Requested(moveAlice, &tc.q, 30*time.Minute, "shop", tc.at, moveNow)
			want := v1alpha1.SessionSpec{TargetPod: "web-1", TargetContainer: "app", Mode: v1alpha1.ModeCopy, ProcessAccess: true,
				Duration: metav1.Duration{Duration: 30 * time.Minute}, KeepPod: true, Reason: "500s",
				Requester: "alice@example.com", RequesterID: "iss#alice", GlassBroken: tc.q.GlassBroken}
			if diff := cmp.Diff(want, sess.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if sess.Namespace != "shop" || sess.GenerateName == "" {
				t.Errorf("made in %q named %q%q, want a generated name in shop", sess.Namespace, sess.GenerateName, sess.Name)
			}
			if move.Step != tc.step || move.To != tc.to || note != tc.note || move.Actor != "alice@example.com" {
				t.Errorf("move %s to %s by %s, told %s; want %s to %s by alice, told %s", move.Step, move.To, move.Actor, note, tc.step, tc.to, tc.note)
			}
			if diff := cmp.Diff(tc.status, statusAfter(move.Status)); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApproved: the approver narrows what was asked, never widens it.
func TestApproved(t *testing.T) {
	asked := func(processAccess bool) *v1alpha1.Session {
		w := sessiontest.Make("shop", "s-1").Mode(v1alpha1.ModeLive).KeepPod(true)
		if processAccess {
			w = w.ProcessAccess("app")
		}
		return w.Obj()
	}
	for name, tc := range map[string]struct {
		sess                *v1alpha1.Session
		d                   wire.Decision
		processAccess, keep bool
	}{
		"as asked":                       {asked(true), wire.Decision{KeepPod: true}, true, true},
		"without process access":         {asked(true), wire.Decision{WithoutProcessAccess: true}, false, false},
		"process access never added":     {asked(false), wire.Decision{}, false, false},
		"the pod is kept only if chosen": {asked(false), wire.Decision{KeepPod: false}, false, false},
	} {
		t.Run(name, func(t *testing.T) {
			m := Approved(moveBob, tc.sess, &tc.d, moveNow)
			got := statusAfter(m.Status).Approval
			if m.Step != v1alpha1.StepApprove || m.To != v1alpha1.PhaseApproved || got == nil {
				t.Fatalf("move %s to %s, approval %v", m.Step, m.To, got)
			}
			if got.Kind != v1alpha1.ApprovalPerson || got.ByID != "iss#bob" || got.ProcessAccess != tc.processAccess || got.KeepPod != tc.keep {
				t.Errorf("approval %+v, want by iss#bob, process access %t, keep %t", got, tc.processAccess, tc.keep)
			}
		})
	}
}

// TestDeniedAndReviewed: who decided is written by identity, an end before
// the start is the person's, and a review keeps the due date a broken
// glass set.
func TestDeniedAndReviewed(t *testing.T) {
	m := Denied(moveBob, &wire.Decision{Reason: "not now"}, moveNow)
	if d := statusAfter(m.Status).Denial; m.To != v1alpha1.PhaseDenied || d == nil || d.ByID != "iss#bob" || d.Reason != "not now" {
		t.Errorf("deny: to %s, denial %+v", m.To, d)
	}
	e := EndedUnstarted(moveBob, v1alpha1.EndApprover, "not needed", moveNow)
	if end := statusAfter(e.Status).End; e.To != v1alpha1.PhaseEnded || e.Actor != "bob@example.com" || end == nil ||
		end.Reason != v1alpha1.EndApprover || end.Note != "not needed" || end.By != "bob@example.com" || !strings.HasPrefix(e.Reason, "before it started: ") {
		t.Errorf("end before the start: to %s by %s (%q), end %+v", e.To, e.Actor, e.Reason, end)
	}
	due := metav1.NewTime(moveNow.Add(-time.Hour))
	st := v1alpha1.SessionStatus{Review: &v1alpha1.Review{DueAt: &due}}
	r := Reviewed(moveBob, &wire.Review{Comment: "fine"}, moveNow)
	r.Status(&st)
	if r.To != "" || st.Review.DueAt != &due || st.Review.ByID != "iss#bob" || st.Review.Comment != "fine" || !st.Review.At.Time.Equal(moveNow) {
		t.Errorf("review: to %q, %+v", r.To, st.Review)
	}
}
