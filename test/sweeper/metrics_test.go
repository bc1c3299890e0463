package sweeper_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// TestPlaneMetrics: what the alerts read, from the real API server: a grant
// past its TTL shows how far past, an overdue review is counted, every
// phase has a series; and a grant the sweeper deletes adds to the lateness
// histogram. The cluster is shared with the other tests, so counts are at
// least what this test made.
func TestPlaneMetrics(t *testing.T) {
	// The grant's Session is not there: an ended one's grant would be
	// taken back at once, not at its TTL.
	rb := grant(t, namespace(t, "metrics"), "s-grant", "30m")
	ns := namespace(t, "metrics-review")
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := sessiontest.Make(ns, "s-metrics").Duration(15 * time.Minute).Reason("outage").GlassBroken().Obj()
	if err := portal.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	// Sessions are never deleted: reviewed at the end, so that the next
	// test's sweeper does not find this one overdue.
	t.Cleanup(func() {
		cur := &v1alpha1.Session{}
		if err := cl.Client.Get(context.Background(), clientKey(s), cur); err != nil {
			t.Error(err)
			return
		}
		now := metav1.Now()
		if cur.Status.Review == nil {
			cur.Status.Review = &v1alpha1.Review{}
		}
		cur.Status.Review.By, cur.Status.Review.At, cur.Status.Review.Comment = "bob", &now, "fine"
		v1alpha1.SetConditions(&cur.Status, now) // as the relay's lifecycle does; the policy holds them to the record
		if err := portal.Client.Status().Update(context.Background(), cur); err != nil {
			t.Errorf("reviewing the test's session: %v", err)
		}
	})
	s.Status = v1alpha1.SessionStatus{Phase: v1alpha1.PhaseApproved,
		Approval: &v1alpha1.Approval{By: "glass broken by alice", At: s.CreationTimestamp, Mode: v1alpha1.ModeLive}}
	if err := portal.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.Status.Phase = v1alpha1.PhaseEnded
	s.Status.End = &v1alpha1.End{By: "alice", Reason: v1alpha1.EndUser, At: metav1.NewTime(s.CreationTimestamp.Add(time.Minute))}
	if err := portal.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	// The sweeper sets the review's due date (24h after the request).
	fake := clockAt(rb.CreationTimestamp.Time)
	startSweeper(t, sweeper.Options{Clock: fake, ReviewWithin: 24 * time.Hour})
	cluster.Eventually(t, 20*time.Second, "the review due date set", func() (bool, error) {
		cur := &v1alpha1.Session{}
		err := cl.Client.Get(ctx, clientKey(s), cur)
		return err == nil && cur.Status.Review != nil && cur.Status.Review.DueAt != nil, err
	})

	// Two hours on: the grant is 90 minutes past its TTL (had the sweeper not
	// deleted it), the review a day overdue at 25 hours.
	later := clockAt(rb.CreationTimestamp.Add(25 * time.Hour))
	reg := prometheus.NewRegistry()
	reg.MustRegister(sweeper.PlaneMetrics(cl.Client, later))
	got := gathered(t, reg)
	if got["breakglass_grant_past_ttl_seconds"] < (24*time.Hour + 29*time.Minute).Seconds() {
		t.Errorf("past TTL: %v s, want at least 24h29m", got["breakglass_grant_past_ttl_seconds"])
	}
	if got["breakglass_grants_standing"] < 1 || got["breakglass_reviews_overdue"] < 1 || got[`breakglass_sessions{phase="Ended"}`] < 1 {
		t.Errorf("grants %v, overdue reviews %v, ended sessions %v", got["breakglass_grants_standing"], got["breakglass_reviews_overdue"], got[`breakglass_sessions{phase="Ended"}`])
	}
	for _, p := range []string{"Pending", "Approved", "Denied", "Active", "Ended", "Expired"} {
		if _, ok := got[`breakglass_sessions{phase="`+p+`"}`]; !ok {
			t.Errorf("no series for phase %s", p)
		}
	}

	// The sweeper deletes the grant at its TTL, and says how late.
	before := histogramCount(t)
	waitForWaiter(t, fake)
	fake.Step(30*time.Minute + 2*time.Second)
	cluster.Eventually(t, 20*time.Second, "the grant deleted", gone(rb))
	cluster.Eventually(t, 20*time.Second, "the deletion's lateness observed", func() (bool, error) { return histogramCount(t) > before, nil })
}

// gathered is every sample, by name{labels}.
func gathered(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}

// gaugeValue is the sweeper's gauge of name, unlabelled, or -1 before it
// is registered.
func gaugeValue(name string) float64 {
	families, _ := ctrlmetrics.Registry.Gather()
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

func histogramCount(t *testing.T) uint64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "breakglass_sweeper_grant_lateness_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}
