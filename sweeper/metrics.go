package sweeper

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// The plane's state as an operator watches it, read from the sweeper's
// cache at each scrape: what the alerts in the chart's PrometheusRule ask
// (a grant past its TTL, an anchor pending too long, reviews overdue). Who
// leads is controller-runtime's leader_election_master_status.

var grantLateness = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "breakglass_sweeper_grant_lateness_seconds",
	Help:    "How long after its TTL the sweeper deleted a grant.",
	Buckets: []float64{.1, .25, .5, 1, 2, 5, 10, 30, 60, 300}})

var (
	sessionsDesc = prometheus.NewDesc("breakglass_sessions", "Sessions by phase.", []string{"phase"}, nil)
	grantsDesc   = prometheus.NewDesc("breakglass_grants_standing", "Session grants (RoleBindings) that exist.", nil, nil)
	pastTTLDesc  = prometheus.NewDesc("breakglass_grant_past_ttl_seconds",
		"How long the oldest grant still standing is past its TTL (0: none is).", nil, nil)
	anchorsDesc      = prometheus.NewDesc("breakglass_anchors_pending", "Ended sessions whose recording is not yet in the transparency log.", nil, nil)
	anchorOldestDesc = prometheus.NewDesc("breakglass_anchor_pending_oldest_seconds",
		"How long ago the oldest session with a pending anchor ended (0: none is pending).", nil, nil)
	overdueDesc = prometheus.NewDesc("breakglass_reviews_overdue", "Glass-broken sessions whose review is past due.", nil, nil)
)

// PlaneMetrics reads Sessions and grants through reader at each scrape,
// on clk's time; New registers one on the sweeper's cache.
func PlaneMetrics(reader client.Reader, clk clock.PassiveClock) prometheus.Collector {
	return &planeCollector{reader: reader, clock: clk}
}

// planeCollector reads Sessions and grants at scrape time.
type planeCollector struct {
	reader client.Reader
	clock  clock.PassiveClock
}

func (c *planeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sessionsDesc, grantsDesc, pastTTLDesc, anchorsDesc, anchorOldestDesc, overdueDesc} {
		ch <- d
	}
}

func (c *planeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := c.clock.Now()
	var sessions v1alpha1.SessionList
	if err := c.reader.List(ctx, &sessions); err != nil {
		ch <- prometheus.NewInvalidMetric(sessionsDesc, err)
	} else {
		phases := map[v1alpha1.SessionPhase]float64{}
		for _, p := range v1alpha1.Terms(v1alpha1.PhaseTerms) {
			phases[v1alpha1.SessionPhase(p)] = 0 // every phase, so a rate or an absence reads right
		}
		var pending, overdue float64
		var oldest time.Duration
		for i := range sessions.Items {
			st := &sessions.Items[i].Status
			phases[cmpPhase(st.Phase)]++
			if st.Evidence != nil && st.Evidence.AnchorPending && st.End != nil {
				pending++
				oldest = max(oldest, now.Sub(st.End.At.Time))
			}
			if r := st.Review; r != nil && r.By == "" && r.DueAt != nil && now.After(r.DueAt.Time) {
				overdue++
			}
		}
		for p, n := range phases {
			ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, n, string(p))
		}
		ch <- prometheus.MustNewConstMetric(anchorsDesc, prometheus.GaugeValue, pending)
		ch <- prometheus.MustNewConstMetric(anchorOldestDesc, prometheus.GaugeValue, oldest.Seconds())
		ch <- prometheus.MustNewConstMetric(overdueDesc, prometheus.GaugeValue, overdue)
	}
	var grants rbacv1.RoleBindingList
	if err := c.reader.List(ctx, &grants, client.HasLabels{v1alpha1.SessionLabel}); err != nil {
		ch <- prometheus.NewInvalidMetric(grantsDesc, err)
		return
	}
	var past time.Duration
	for i := range grants.Items {
		if expiry, _ := GrantExpiry(&grants.Items[i]); now.After(expiry) {
			past = max(past, now.Sub(expiry))
		}
	}
	ch <- prometheus.MustNewConstMetric(grantsDesc, prometheus.GaugeValue, float64(len(grants.Items)))
	ch <- prometheus.MustNewConstMetric(pastTTLDesc, prometheus.GaugeValue, past.Seconds())
}

// cmpPhase counts a Session with no phase yet as Pending.
func cmpPhase(p v1alpha1.SessionPhase) v1alpha1.SessionPhase {
	if p == "" {
		return v1alpha1.PhasePending
	}
	return p
}
