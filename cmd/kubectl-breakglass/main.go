// Command kubectl-breakglass is the break-glass plane's user CLI, a kubectl
// plugin: render and test the admission policies offline.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-breakglass",
		Short:         "Break-glass debug access: look inside a production pod without exec",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newPolicyCommand(), newAuditCommand(), newRecordingCommand())
	return root
}
