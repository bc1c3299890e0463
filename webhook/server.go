package webhook

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Names the chart and the webhook share.
const (
	// ConfigurationName is the ValidatingWebhookConfiguration's name.
	ConfigurationName = "breakglass-webhook"
	// WebhookName is the one webhook in it.
	WebhookName = "debug-image.breakglass.tower.dev"
	// Path is where the webhook serves.
	Path = "/validate-debug-image"
	// TimeoutSeconds is how long the API server waits for an answer; the
	// verifier's deadline is shorter.
	TimeoutSeconds = 5
)

// ServerOptions configure the webhook server.
type ServerOptions struct {
	Host    string
	Port    int
	CertDir string
}

// NewServer returns the webhook server with the handler registered. It
// reloads its certificate when the files in CertDir change.
func NewServer(opts ServerOptions, images ImageVerifier) (webhook.Server, error) {
	srv := webhook.NewServer(webhook.Options{Host: opts.Host, Port: opts.Port, CertDir: opts.CertDir,
		CertName: CertFile, KeyName: KeyFile})
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	h := &Handler{Images: images, Decoder: admission.NewDecoder(scheme)}
	srv.Register(Path, &webhook.Admission{Handler: h})
	return srv, nil
}
