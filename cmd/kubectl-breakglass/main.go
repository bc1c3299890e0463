// Command kubectl-breakglass is the break-glass plane's user CLI, a kubectl
// plugin: drive debug sessions through the relay, render and test the
// admission policies offline, verify recordings and the audit log.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/cmd/kubectl-breakglass/session"
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
	root.AddCommand(newPolicyCommand(), newAuditCommand(), newRecordingCommand(), session.New())
	return root
}
