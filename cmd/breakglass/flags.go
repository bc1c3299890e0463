package main

import (
	"flag"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tower-dev/breakglass/internal/probes"
)

// logFlags adds controller-runtime's logging flags (--zap-log-level,
// --zap-encoder, --zap-devel, --zap-stacktrace-level, --zap-time-encoding)
// to cmd: JSON lines by default, as in production.
func logFlags(cmd *cobra.Command) *zap.Options {
	opts := &zap.Options{}
	fs := flag.NewFlagSet(cmd.Name(), flag.ContinueOnError)
	opts.BindFlags(fs)
	cmd.Flags().AddGoFlagSet(fs)
	return opts
}

// probeFlags adds the usual --health-probe-bind-address and
// --metrics-bind-address to cmd.
func probeFlags(cmd *cobra.Command, o *probes.Options) {
	cmd.Flags().StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "Prometheus metrics address (0 to turn off)")
	cmd.Flags().StringVar(&o.HealthAddr, "health-probe-bind-address", ":8081", "/healthz and /readyz address (0 to turn off)")
}
