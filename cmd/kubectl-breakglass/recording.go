package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
)

func newRecordingCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "recording", Short: "Check session recordings without the portal"}
	cmd.AddCommand(newRecordingVerifyCommand())
	var speed float64
	var from time.Duration
	play := &cobra.Command{
		Use:   "play FILE",
		Short: "Replay a recording (recording.cast) in this terminal",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from < 0 {
				return fmt.Errorf("--from %s: an offset from the start, not before it", from)
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			if err := recording.PlayFrom(cmd.Context(), f, cmd.OutOrStdout(), speed, from); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			return nil
		},
	}
	play.Flags().Float64Var(&speed, "speed", 1, "how many times faster than real time")
	play.Flags().DurationVar(&from, "from", 0, "start at this offset (as \"recording commands\" and \"search\" print it, e.g. 1m23.5s): what came before is shown at once")
	cmd.AddCommand(play, newRecordingBundleCommand(), newRecordingCommandsCommand(), newRecordingSearchCommand())
	return cmd
}

func newRecordingBundleCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "bundle DIR",
		Short: "Print a recording's anchor as a Sigstore bundle, for stock cosign",
		Long: `Print the anchor in DIR/rekor-bundle.json as a standard Sigstore bundle of
DIR/manifest.json: what relays now keep beside each recording as
manifest.sigstore.json, for recordings anchored before they did. Nothing is
trusted here; check the result with the key and log you pin:

  kubectl breakglass recording bundle ./s1 > ./s1/manifest.sigstore.json
  cosign verify-blob --key relay.pub --bundle ./s1/manifest.sigstore.json --trusted-root trusted-root.json ./s1/manifest.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			manifest, err := os.ReadFile(filepath.Join(args[0], recording.ManifestFile))
			if err != nil {
				return err
			}
			b, err := readBundleFile(filepath.Join(args[0], tlog.BundleFile))
			if err != nil {
				return err
			}
			out, err := b.Sigstore(manifest)
			if err != nil {
				return fmt.Errorf("%s: %w", tlog.BundleFile, err)
			}
			_, err = cmd.OutOrStdout().Write(append(out, '\n'))
			return err
		},
	}
}
