package audit

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// SinkFailures counts batches a sink refused, by sink kind (writer, file,
// http). Each server registers it in the registry its metrics port serves.
var SinkFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "breakglass_audit_sink_failures_total",
	Help: "Audit batches a sink refused, by sink kind (writer, file, http); a Session change waits for its event to be written."},
	[]string{"sink"})

func sinkKind(s Sink) string {
	switch s.(type) {
	case *Writer:
		return "writer"
	case *File:
		return "file"
	case *HTTP:
		return "http"
	}
	return fmt.Sprintf("%T", s)
}
