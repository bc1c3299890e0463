package debugsession_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// failingSink fails while down is set.
type failingSink struct {
	down atomic.Bool
	buf  bytes.Buffer
}

func (f *failingSink) Write(_ context.Context, lines []byte) error {
	if f.down.Load() {
		return errors.New("the audit collector is down")
	}
	f.buf.Write(lines)
	return nil
}

// TestLifecycleAuditsBeforeEffect: on the real API server, as the portal,
// a move the audit log cannot take changes nothing; a move the cluster
// refuses after it was audited is audited as undone; a move the lifecycle
// does not allow is refused before anything is written.
func TestLifecycleAuditsBeforeEffect(t *testing.T) {
	ctx := context.Background()
	ns := cl.Namespace(t, "lifecycle")
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	sink := &failingSink{}
	m := &lifecycle.Machine{Client: portal.Client, Kube: portal.Kube, Writer: v1alpha1.WriterPortal, Component: "test",
		Audit: audit.NewLog(audit.Event{}, nil, sink)}
	s := sessiontest.Make(ns, "s1").Reason("500s").Obj()
	if err := portal.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := m.Make(ctx, s, lifecycle.Move{Step: v1alpha1.StepRequest, To: v1alpha1.PhasePending, Actor: "alice", Reason: "500s"}); err != nil {
		t.Fatal(err)
	}
	approve := lifecycle.Move{Step: v1alpha1.StepApprove, To: v1alpha1.PhaseApproved, Actor: "bob",
		Status: func(st *v1alpha1.SessionStatus) {
			st.Approval = &v1alpha1.Approval{By: "bob", At: metav1.Now(), Mode: v1alpha1.ModeLive}
		}}

	sink.down.Store(true)
	if err := m.Make(ctx, s, approve); !errors.Is(err, lifecycle.ErrNotAudited) {
		t.Fatalf("an approval the audit log could not take: %v", err)
	}
	sink.down.Store(false)
	stored := &v1alpha1.Session{}
	if err := portal.Client.Get(ctx, client.ObjectKeyFromObject(s), stored); err != nil {
		t.Fatal(err)
	}
	if stored.Status.Phase != v1alpha1.PhasePending || stored.Status.Approval != nil || s.Status.Approval != nil {
		t.Fatalf("an unaudited approval took effect: %+v", stored.Status)
	}

	// Someone else changed the Session meanwhile: the update is refused
	// after the approval was audited, and the log says it did not happen.
	stale := s.DeepCopy()
	if err := m.Make(ctx, s, lifecycle.Move{Step: v1alpha1.StepReviewDue, Actor: "sweeper", Status: func(st *v1alpha1.SessionStatus) {
		due := metav1.Now()
		st.Review = &v1alpha1.Review{DueAt: &due}
	}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Make(ctx, stale, approve); err == nil || stale.Status.Phase != v1alpha1.PhasePending {
		t.Fatalf("an approval on a stale read: %v, phase %s", err, stale.Status.Phase)
	}
	log := sink.buf.String()
	if !strings.Contains(log, `"kind":"approve","actor":"bob"`) || !strings.Contains(log, `"kind":"undone","actor":"bob","session":"`+ns+`/s1","reason":"approve did not take effect`) {
		t.Fatalf("the audit log does not say the approval was undone:\n%s", log)
	}
	if n, err := audit.Verify(strings.NewReader(log)); err != nil || n != 4 {
		t.Fatalf("the chain: %d events, %v", n, err)
	}

	if err := m.Make(ctx, s, lifecycle.Move{Step: v1alpha1.StepStart, To: v1alpha1.PhaseActive, Actor: "alice"}); !errors.Is(err, lifecycle.ErrCannotMove) {
		t.Fatalf("Pending to Active: %v", err)
	}
	sweeperMachine := *m
	sweeperMachine.Writer = v1alpha1.WriterSweeper
	if err := sweeperMachine.Make(ctx, s, approve); !errors.Is(err, lifecycle.ErrCannotMove) {
		t.Fatalf("the sweeper approving: %v", err)
	}
	if strings.Count(sink.buf.String(), "\n") != 4 {
		t.Fatal("a refused move reached the audit log as if it happened")
	}

	// A heartbeat is the portal's, on a session it runs: on a Pending one,
	// or as the sweeper, it is refused and nothing is written.
	version := s.ResourceVersion
	if err := m.Beat(ctx, s); !errors.Is(err, lifecycle.ErrCannotMove) || s.Status.Heartbeat != nil {
		t.Fatalf("a heartbeat on a Pending session: %v", err)
	}
	active := s.DeepCopy()
	active.Status.Phase = v1alpha1.PhaseActive
	if err := sweeperMachine.Beat(ctx, active); !errors.Is(err, lifecycle.ErrCannotMove) || active.Status.Heartbeat != nil {
		t.Fatalf("the sweeper beating: %v", err)
	}
	if err := portal.Client.Get(ctx, client.ObjectKeyFromObject(s), stored); err != nil || stored.ResourceVersion != version {
		t.Fatalf("a refused heartbeat was written: %v", err)
	}
}
