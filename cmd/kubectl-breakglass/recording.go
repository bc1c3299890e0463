package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/evidence/recording"
)

func newRecordingCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "recording", Short: "Check session recordings without the portal"}
	cmd.AddCommand(newRecordingVerifyCommand())
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
