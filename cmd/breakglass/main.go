// Command breakglass is the plane's server: `breakglass sweeper` and `breakglass webhook`;
// the relay joins them: one image for three Deployments.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "breakglass",
		Short:         "The break-glass plane's server components",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newSweeperCommand(), newWebhookCommand(), newRelayCommand(), newCheckCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
