package webhook

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics, in controller-runtime's registry beside its own webhook metrics
// (requests, latency, in flight), served on the metrics port.
var (
	verifications = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "breakglass_webhook_verifications_total",
		Help: "Debug image signature checks by result: verified, cached (verified before), unsigned (no valid signature by the policy's key or identity), not-pinned, no-policy, deadline."},
		[]string{"result"})
	verificationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "breakglass_webhook_verification_seconds",
		Help:    "How long a signature check that went to the registry took.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2, 3, 5}})
	admissions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "breakglass_webhook_admissions_total",
		Help: "Admission answers by decision: allowed, denied, malformed."}, []string{"decision"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(verifications, verificationSeconds, admissions)
}

// verificationResult names a Verify outcome for the metric.
func verificationResult(err error, cached bool) string {
	switch {
	case err == nil && cached:
		return "cached"
	case err == nil:
		return "verified"
	case errors.Is(err, ErrNotPinned):
		return "not-pinned"
	case errors.Is(err, ErrNoPolicy):
		return "no-policy"
	case errors.Is(err, ErrDeadline):
		return "deadline"
	}
	return "unsigned"
}

func observeVerification(began time.Time, err error, cached bool) {
	verifications.WithLabelValues(verificationResult(err, cached)).Inc()
	if !cached && !errors.Is(err, ErrNotPinned) && !errors.Is(err, ErrNoPolicy) {
		verificationSeconds.Observe(time.Since(began).Seconds())
	}
}
