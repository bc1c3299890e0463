package main

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/internal/probes"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/webhook"
)

func newWebhookCommand() *cobra.Command {
	var (
		policyFile, certDir, host string
		port                      int
		selfManaged               bool
		opts                      webhook.VerifierOptions
		dnsNames                  []string
		probeOpts                 probes.Options
		logOpts                   *zap.Options
	)
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Serve the admission webhook that checks debug images' cosign signatures",
		Long: `The webhook admits a break-glass debug container only if its image is pinned by
digest and signed by the key of the policy that covers its repository. The API
server calls it only for requests that carry a breakglass- container.

Registry credentials: mount the pull secret's .dockerconfigjson as
$DOCKER_CONFIG/config.json.

Certificates: --self-managed keeps a CA and serving certificate in the Secret
` + manifests.WebhookSecretName + ` and patches the CA bundle into the webhook
configuration, renewing them when a third of their life is left; without it,
the certificate files in --cert-dir (e.g. from cert-manager) are served and
reloaded when they change.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Deadline >= webhook.TimeoutSeconds*time.Second {
				return errors.New("--deadline: must be shorter than the webhook's timeoutSeconds (5s), so a timeout is a denial")
			}
			cfg, err := webhook.LoadConfig(policyFile)
			if err != nil {
				return err
			}
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(logOpts)))
			ctx := ctrl.SetupSignalHandler()
			verifier, err := webhook.NewVerifier(ctx, cfg, opts)
			if err != nil {
				return err
			}
			if selfManaged {
				restCfg, err := ctrl.GetConfig()
				if err != nil {
					return err
				}
				kube, err := kubernetes.NewForConfig(restCfg)
				if err != nil {
					return err
				}
				certs := &webhook.Certs{Kube: kube, Namespace: v1alpha1.Namespace, SecretName: manifests.WebhookSecretName,
					WebhookConfiguration: webhook.ConfigurationName, DNSNames: dnsNames, CertDir: certDir}
				if err := certs.Ensure(ctx); err != nil {
					return err
				}
				log := ctrl.Log.WithName("certs")
				go certs.Rotate(ctx, time.Hour, func(err error) { log.Error(err, "renewing the webhook's certificate") })
			}
			srv, err := webhook.NewServer(webhook.ServerOptions{Host: host, Port: port, CertDir: certDir}, verifier)
			if err != nil {
				return err
			}
			// Ready once it serves TLS; the metrics are controller-runtime's
			// webhook metrics and the signature checks' (webhook/metrics.go).
			probeOpts.Ready, probeOpts.Metrics = srv.StartedChecker(), ctrlmetrics.Registry
			probeServers, err := probes.Start(probeOpts)
			if err != nil {
				return err
			}
			defer func() { _ = probeServers.Stop(context.Background()) }()
			return srv.Start(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&policyFile, "policy-file", "/etc/breakglass/webhook/policies.yaml", "signature policies: repository -> cosign key")
	f.StringVar(&certDir, "cert-dir", "/var/run/breakglass/webhook-certs", "where tls.crt and tls.key are read (and, self-managed, written)")
	f.StringVar(&host, "host", "", "listen address (all by default)")
	f.IntVar(&port, "port", 9443, "listen port")
	f.BoolVar(&selfManaged, "self-managed", true, "generate and rotate the serving certificate; false when cert-manager provides it")
	f.StringSliceVar(&dnsNames, "dns-name", []string{"breakglass-webhook.breakglass-system.svc"}, "names the serving certificate answers to")
	f.DurationVar(&opts.Deadline, "deadline", 3*time.Second, "one verification's deadline; shorter than the webhook's timeoutSeconds")
	f.IntVar(&opts.CacheSize, "cache-size", 1024, "verified (digest, policy) pairs remembered")
	f.DurationVar(&opts.CacheTTL, "cache-ttl", 10*time.Minute, "how long a verified pair is remembered")
	probeFlags(cmd, &probeOpts)
	logOpts = logFlags(cmd)
	return cmd
}
