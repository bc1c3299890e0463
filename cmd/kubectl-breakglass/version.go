package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set by the build (-X main.version=v0.3.0); a build from a
// checkout says dev and its commit.
var version = "dev"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version, commit and platform",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			commit, modified := "unknown", false
			if info, ok := debug.ReadBuildInfo(); ok {
				for _, s := range info.Settings {
					switch s.Key {
					case "vcs.revision":
						commit = s.Value
					case "vcs.modified":
						modified = s.Value == "true"
					}
				}
			}
			if modified {
				commit += " (modified)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "kubectl-breakglass %s, commit %s, %s, %s/%s\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
