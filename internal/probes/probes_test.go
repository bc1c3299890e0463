package probes

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestProbes: /healthz and /readyz on one port, /metrics on another and
// only there; /readyz fails with the check's reason; "0" turns a listener off.
func TestProbes(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "breakglass_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	notReady := errors.New("recording store: bucket unreachable")
	s, err := Start(Options{HealthAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Metrics: reg,
		Ready: func(*http.Request) error { return notReady }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop(context.Background()) }()
	if code, _ := get(t, "http://"+s.HealthAddr+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	if code, body := get(t, "http://"+s.HealthAddr+"/readyz?verbose"); code != http.StatusInternalServerError || !strings.Contains(body, "ready failed") {
		t.Fatalf("/readyz while not ready: %d %s", code, body)
	}
	notReady = nil
	if code, _ := get(t, "http://"+s.HealthAddr+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz once ready: %d", code)
	}
	if code, body := get(t, "http://"+s.MetricsAddr+"/metrics"); code != http.StatusOK || !strings.Contains(body, "breakglass_test_total 3") {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	if code, _ := get(t, "http://"+s.HealthAddr+"/metrics"); code != http.StatusNotFound {
		t.Fatalf("/metrics on the health port: %d", code)
	}
	if code, _ := get(t, "http://"+s.MetricsAddr+"/healthz"); code != http.StatusNotFound {
		t.Fatalf("/healthz on the metrics port: %d", code)
	}

	off, err := Start(Options{HealthAddr: "0", MetricsAddr: "127.0.0.1:0", Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = off.Stop(context.Background()) }()
	if off.HealthAddr != "" || off.MetricsAddr == "" {
		t.Fatalf("listening on %q and %q", off.HealthAddr, off.MetricsAddr)
	}
}
