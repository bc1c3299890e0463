package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/vap"
	"github.com/tower-dev/breakglass/webhook"
)

func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Render and test the plane's admission policies",
	}
	cmd.AddCommand(newPolicyRenderCommand(), newPolicyTestCommand(), newPolicyGenerateCommand())
	return cmd
}

var digestRef = regexp.MustCompile(`^[^@\s]+@sha256:[a-f0-9]{64}$`)

func parseProfile(s string) (policies.Profile, error) {
	for _, p := range policies.Profiles {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("--profile %q: must be ground or flight", s)
}

func newPolicyRenderCommand() *cobra.Command {
	var profile, webhookPolicies string
	var images []string
	var kyverno bool
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print every manifest of the plane, in the order it applies to an empty cluster",
		Long: `Print the plane's namespace, CRDs, ServiceAccounts, roles, bindings, and
the admission policies and bindings for a profile, as the chart installs
them with its default params and the debug images given:

  kubectl breakglass policy render --profile flight --debug-image REPO@sha256:... > plane.yaml
  kubectl apply -f plane.yaml

With --kyverno it prints instead what a site that runs Kyverno (tested with
1.19.1; the policy is policies.kyverno.io/v1) installs to have Kyverno do the grants' TTL and the debug image's
signature check: a ClusterRole aggregated to its cleanup controller, and an
ImageValidatingPolicy equivalent to the webhook's policies file:

  kubectl breakglass policy render --kyverno --webhook-policies policies.yaml > kyverno.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kyverno || webhookPolicies != "" {
				return renderKyverno(cmd.OutOrStdout(), kyverno, webhookPolicies)
			}
			p, err := parseProfile(profile)
			if err != nil {
				return err
			}
			for _, img := range images {
				if !digestRef.MatchString(img) {
					return fmt.Errorf("--debug-image %q: must be pinned by digest, as REPOSITORY@sha256:<64 hex>", img)
				}
			}
			out, err := render(p, images)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&profile, "profile", "flight", "ground (development) or flight (production)")
	cmd.Flags().StringArrayVar(&images, "debug-image", nil, "an allowed debug image, pinned by digest (repeatable)")
	cmd.Flags().BoolVar(&kyverno, "kyverno", false, "print Kyverno's part instead: the grants' cleanup and the debug image's signature check")
	cmd.Flags().StringVar(&webhookPolicies, "webhook-policies", "", "with --kyverno, the webhook's policies file (the chart's webhook.policies) to render as Kyverno's")
	return cmd
}

// renderKyverno prints Kyverno's objects for the webhook's policies.
func renderKyverno(w io.Writer, kyverno bool, policiesFile string) error {
	if !kyverno || policiesFile == "" {
		return errors.New("--kyverno and --webhook-policies go together: the policies file says which keys and identities Kyverno checks")
	}
	cfg, err := webhook.LoadConfig(policiesFile)
	if err != nil {
		return fmt.Errorf("--webhook-policies: %w", err)
	}
	objs, err := manifests.Kyverno(cfg)
	if err != nil {
		return fmt.Errorf("--webhook-policies %s: %w", policiesFile, err)
	}
	out, err := manifests.YAML(objs)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// render is the whole plane as one YAML stream.
func render(p policies.Profile, images []string) ([]byte, error) {
	objs, err := manifests.All(p, policies.DefaultParams(images...))
	if err != nil {
		return nil, err
	}
	return manifests.YAML(objs)
}

func newPolicyTestCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "test DIR",
		Short: "Run a folder of YAML policy cases through the API server's own evaluator",
		Long: `Run every *.yaml case file in DIR through the plane's policies, in each
profile the file names, with the API server's own CEL compiler and evaluator,
and print a pass/fail table. Exits non-zero if any case fails.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return policyTest(cmd.Context(), cmd.OutOrStdout(), args[0])
		},
	}
}

func policyTest(ctx context.Context, w io.Writer, dir string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	files, err := vap.LoadCaseDir(dir)
	if err != nil {
		return err
	}
	runner, err := vap.NewRunner()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tFILE\tPROFILE\tCASE\tEXPECT\tGOT\tDETAIL")
	passed, failed := 0, 0
	for _, cf := range files {
		results, err := runner.Run(ctx, cf)
		if err != nil {
			return err
		}
		for _, r := range results {
			verdict, detail := "PASS", ""
			if r.Pass {
				passed++
			} else {
				verdict, detail = "FAIL", r.Detail
				failed++
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", verdict, r.File, r.Profile, r.Case, r.Expect, r.Got, detail)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return fmt.Errorf("%d of %d cases failed", failed, passed+failed)
	}
	return nil
}
