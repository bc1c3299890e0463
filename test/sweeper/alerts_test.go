package sweeper_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// rule is an alert of the chart's rule file, as the test reads it.
type rule struct {
	Alert       string            `json:"alert"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

const alertsFile = "../../charts/breakglass/files/alerts.yaml"

// TestAlertRules runs the chart's alerts through promtool (Prometheus' own
// rule tester, bin/promtool) over series the plane produced here, a minute
// apart: a grant's past-TTL as the sweeper's metrics read it from the API
// server at successive times, the sweeper's leader gauge while it led (then
// no series, as when its process is gone), an audit sink's failures as a failing sink counted
// them. Series only a running Prometheus or another process makes (up, the
// webhook's deadline checks, pending anchors, overdue reviews) are written
// out here. Each alert is quiet early and firing later; every alert of the
// file is checked.
func TestAlertRules(t *testing.T) {
	promtool, err := filepath.Abs("../../bin/promtool")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(promtool); err != nil {
		t.Fatalf("promtool is built by make test (make bin/promtool): %v", err)
	}
	series := map[string][]float64{}

	// A grant, seen only in its namespace, from two minutes before its TTL
	// to ten after.
	ns := namespace(t, "alerts")
	rb := grant(t, ns, "s-alerts", "15m")
	t.Cleanup(func() { _ = cl.Client.Delete(context.Background(), rb) })
	expiry, _ := sweeper.GrantExpiry(rb)
	reader := client.NewNamespacedClient(cl.Client, ns)
	for i := range 13 {
		reg := prometheus.NewRegistry()
		reg.MustRegister(sweeper.PlaneMetrics(reader, clockAt(expiry.Add(time.Duration(i-2)*time.Minute))))
		series["breakglass_grant_past_ttl_seconds"] = append(series["breakglass_grant_past_ttl_seconds"], gathered(t, reg)["breakglass_grant_past_ttl_seconds"])
	}

	// A leading sweeper, then none.
	leaderSeries := `leader_election_master_status{name="breakglass-sweeper"}`
	r := startSweeper(t, sweeper.Options{Clock: clockAt(time.Now()), LeaderElection: true,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond})
	cluster.Eventually(t, 20*time.Second, "elected", func() (bool, error) {
		select {
		case <-r.mgr.Elected():
			return true, nil
		default:
			return false, nil
		}
	})
	led := gathered(t, ctrlmetrics.Registry)[leaderSeries]
	r.stop()
	if led != 1 {
		t.Fatalf("the leader gauge while leading: %v, want 1", led)
	}
	// Then the sweeper is gone (client-go's elector does not lower its gauge
	// when it stops; its process, and so the series, goes): absent() fires.
	series[leaderSeries] = []float64{led, led}

	// An audit sink that refuses every event.
	failures := testutil.ToFloat64(audit.SinkFailures.WithLabelValues("http"))
	log := audit.NewLog(audit.Event{}, nil, &audit.HTTP{URL: "http://127.0.0.1:1/", Retries: 0})
	s := `breakglass_audit_sink_failures_total{sink="http",component="breakglass-relay"}`
	for range 13 {
		series[s] = append(series[s], testutil.ToFloat64(audit.SinkFailures.WithLabelValues("http"))-failures)
		if _, err := log.Record(context.Background(), audit.Event{Kind: "grant"}); err == nil {
			t.Fatal("a refusing sink took an event")
		}
	}

	// What only Prometheus or another component makes.
	series[`up{component="breakglass-webhook"}`] = append([]float64{1, 1}, repeat(0, 11)...)
	series[`up{component="breakglass-relay"}`] = repeat(1, 13) // another target up changes nothing
	series[`breakglass_webhook_verifications_total{result="deadline"}`] = steps(0, 1, 13)
	series["breakglass_anchor_pending_oldest_seconds"] = steps(3500, 60, 13)
	series["breakglass_reviews_overdue"] = append([]float64{0}, repeat(1, 12)...)
	// The backstop's count, as TestStandingRightsBackstop sees it rise.
	series[`breakglass_portal_standing_rights{component="breakglass-sweeper"}`] = append([]float64{0, 0}, repeat(1, 11)...)
	// The drift backstop's count, as TestPlaneDriftBackstop sees it rise.
	series[`breakglass_plane_drift{component="breakglass-sweeper"}`] = append([]float64{0, 0}, repeat(2, 11)...)

	// Quiet at the first time, firing at the second.
	when := map[string][2]time.Duration{
		"BreakglassGrantPastTTL":         {2 * time.Minute, 6 * time.Minute},
		"BreakglassPortalStandingRights": {2 * time.Minute, 5 * time.Minute},
		"BreakglassPlaneDrift":           {time.Minute, 3 * time.Minute},
		"BreakglassNoSweeperLeader":      {time.Minute, 10 * time.Minute},
		"BreakglassWebhookDown":          {time.Minute, 6 * time.Minute},
		"BreakglassWebhookChecksFailing": {2 * time.Minute, 10 * time.Minute},
		"BreakglassAnchorPending":        {2 * time.Minute, 10 * time.Minute},
		"BreakglassReviewsOverdue":       {5 * time.Minute, 12 * time.Minute},
		"BreakglassAuditSinkFailing":     {2 * time.Minute, 10 * time.Minute},
	}
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct{ Rules []rule } `json:"groups"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	var checks []map[string]any
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			at, ok := when[r.Alert]
			if !ok {
				t.Errorf("alert %s has no case here", r.Alert)
				continue
			}
			delete(when, r.Alert)
			checks = append(checks,
				map[string]any{"eval_time": at[0].String(), "alertname": r.Alert, "exp_alerts": []any{}},
				map[string]any{"eval_time": at[1].String(), "alertname": r.Alert, "exp_alerts": []any{
					map[string]any{"exp_labels": r.Labels, "exp_annotations": r.Annotations}}})
		}
	}
	if len(when) > 0 {
		t.Errorf("cases for alerts the file does not have: %v", when)
	}
	var input []map[string]string
	for name, values := range series {
		var v []string
		for _, x := range values {
			v = append(v, fmt.Sprint(x))
		}
		input = append(input, map[string]string{"series": name, "values": strings.Join(v, " ")})
	}
	rules, err := filepath.Abs(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	test, err := yaml.Marshal(map[string]any{"rule_files": []string{rules}, "evaluation_interval": "1m",
		"tests": []any{map[string]any{"interval": "1m", "input_series": input, "alert_rule_test": checks}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "alerts_test.yaml")
	if err := os.WriteFile(path, test, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n%s", err, out, test)
	}
	if !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool said: %s", out)
	}
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func steps(from, by float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = from + by*float64(i)
	}
	return out
}
