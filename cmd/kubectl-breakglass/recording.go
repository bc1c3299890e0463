package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/relay/recording"
)

func newRecordingCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "recording", Short: "Check session recordings without the portal"}
	cmd.AddCommand(&cobra.Command{
		Use:   "verify DIR",
		Short: "Check a recording's files against its manifest",
		Long: `Check every file of a recording (recording.cast, transcript.raw) in DIR
against the SHA-256 and size its manifest.json names, and print the manifest's
own SHA-256: the value anchored in the transparency log. Exits non-zero naming
the first file that does not match. The same check with stock tools:

  jq -r '.files | to_entries[] | "\(.value.sha256)  \(.key)"' manifest.json | sha256sum -c
  sha256sum manifest.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			manifest, checks, err := recording.VerifyDir(args[0])
			w := cmd.OutOrStdout()
			for _, c := range checks {
				if c.Verified {
					fmt.Fprintf(w, "ok        %-16s sha256:%s\n", c.Name, c.Got)
				} else {
					fmt.Fprintf(w, "MISMATCH  %-16s %s\n", c.Name, c.Problem)
				}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "manifest  sha256:%s\n", manifest)
			return nil
		},
	})
	var speed float64
	play := &cobra.Command{
		Use:   "play FILE",
		Short: "Replay a recording (recording.cast) in this terminal",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			if err := recording.Play(cmd.Context(), f, cmd.OutOrStdout(), speed); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			return nil
		},
	}
	play.Flags().Float64Var(&speed, "speed", 1, "how many times faster than real time")
	cmd.AddCommand(play)
	return cmd
}
