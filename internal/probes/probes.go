// Package probes serves a server's /healthz and /readyz on one port and its
// /metrics on another, apart from its API, as controller-runtime's manager
// does for the sweeper: the kubelet and Prometheus reach them without
// reaching the API (or its authentication), and the API's NetworkPolicy
// and TLS stay its own.
package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// Options say where to listen ("0" turns a listener off) and what to serve.
type Options struct {
	HealthAddr, MetricsAddr string
	// Ready is /readyz's check; /healthz only says the process answers.
	Ready healthz.Checker
	// Metrics is what /metrics serves.
	Metrics prometheus.Gatherer
}

// Servers are the listeners Start opened.
type Servers struct {
	// HealthAddr and MetricsAddr are where they listen (a port of 0 chosen).
	HealthAddr, MetricsAddr string
	servers                 []*http.Server
}

// Start listens and serves until Stop.
func Start(o Options) (*Servers, error) {
	s := &Servers{}
	health := http.NewServeMux()
	health.Handle("/healthz", http.StripPrefix("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}))
	ready := o.Ready
	if ready == nil {
		ready = healthz.Ping
	}
	health.Handle("/readyz", http.StripPrefix("/readyz", &healthz.Handler{Checks: map[string]healthz.Checker{"ready": ready}}))
	metrics := http.NewServeMux()
	metrics.Handle("/metrics", promhttp.HandlerFor(o.Metrics, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	for _, l := range []struct {
		addr    string
		handler http.Handler
		bound   *string
	}{{o.HealthAddr, health, &s.HealthAddr}, {o.MetricsAddr, metrics, &s.MetricsAddr}} {
		if l.addr == "0" || l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			_ = s.Stop(context.Background())
			return nil, fmt.Errorf("listening on %s: %w", l.addr, err)
		}
		*l.bound = ln.Addr().String()
		srv := &http.Server{Handler: l.handler, ReadHeaderTimeout: 5 * time.Second}
		s.servers = append(s.servers, srv)
		go func() { _ = srv.Serve(ln) }()
	}
	return s, nil
}

// Stop closes the listeners.
func (s *Servers) Stop(ctx context.Context) error {
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
