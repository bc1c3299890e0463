// Command kubectl-breakglass is the break-glass plane's user CLI, a kubectl
// plugin: sign in, drive debug sessions through the relay, render and test
// the admission policies offline, verify recordings and the audit log.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/cmd/kubectl-breakglass/login"
	"github.com/tower-dev/breakglass/cmd/kubectl-breakglass/session"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(session.ExitCode(err))
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-breakglass",
		Short:         "Break-glass debug access: look inside a production pod without exec",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(login.New()...)
	root.AddCommand(newPolicyCommand(), newAuditCommand(), newRecordingCommand(), session.New(), newVersionCommand())
	// A wrong flag is a wrong command line (exit code 2), as in kubectl.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return session.UsageError(err) })
	return root
}
