package main

import (
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/tower-dev/breakglass/internal/selfcheck"
)

// newCheckCommand is what the chart's `helm test` pod runs, as the portal.
func newCheckCommand() *cobra.Command {
	var namespace, kubeconfig string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check the installed plane as the portal: nothing held at rest, a bad grant refused",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			kube, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			return selfcheck.Run(cmd.Context(), kube, namespace, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&namespace, "namespace", "default", "an app namespace to check in (not a protected one)")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "a kubeconfig (default: the pod's ServiceAccount)")
	return cmd
}
