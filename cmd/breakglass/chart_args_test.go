package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	chart "github.com/tower-dev/breakglass/charts/breakglass"
)

// TestChartArgsParse: every workload the chart renders (its reviewed
// golden renders) starts a command this binary has, with flags it knows
// and no stray arguments: a flag renamed on one side and not the other
// fails here, not in a cluster.
func TestChartArgsParse(t *testing.T) {
	commands := map[string]func() *cobra.Command{"sweeper": newSweeperCommand, "webhook": newWebhookCommand, "relay": newRelayCommand}
	goldens, err := filepath.Glob("../../charts/breakglass/testdata/golden/*.yaml")
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no golden renders: %v", err)
	}
	seen := map[string]bool{}
	for _, g := range goldens {
		raw, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		workloads, err := chart.Workloads(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range workloads {
			for _, c := range d.Spec.Template.Spec.Containers {
				if len(c.Args) == 0 {
					t.Fatalf("%s: %s/%s has no command", filepath.Base(g), d.Metadata.Name, c.Name)
				}
				newCmd, ok := commands[c.Args[0]]
				if !ok {
					t.Fatalf("%s: %s runs %q, not a command of breakglass", filepath.Base(g), d.Metadata.Name, c.Args[0])
				}
				cmd := newCmd()
				if err := cmd.ParseFlags(c.Args[1:]); err != nil {
					t.Errorf("%s: %s: %v", filepath.Base(g), d.Metadata.Name, err)
				} else if rest := cmd.Flags().Args(); len(rest) > 0 {
					t.Errorf("%s: %s: stray arguments %v", filepath.Base(g), d.Metadata.Name, rest)
				}
				seen[c.Args[0]] = true
			}
		}
	}
	if len(seen) != 3 {
		t.Fatalf("checked %v: want the sweeper, the webhook and the relay", seen)
	}
}
