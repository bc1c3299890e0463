package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/evidence/audit"
)

func newAuditCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Check the hash-chained audit log"}
	cmd.AddCommand(&cobra.Command{
		Use:   "verify FILE",
		Short: "Check every event's hash and the chain between them; - reads standard input",
		Long: `Check that every event matches its hash, names the hash of the event before it,
and that no sequence number is missing: an edited, removed, inserted or
reordered event is reported with its line, and the command exits non-zero.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := cmd.InOrStdin()
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			n, err := audit.Verify(r)
			if err != nil {
				return fmt.Errorf("%s: after %d good events: %w", args[0], n, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d events, chain intact\n", args[0], n)
			return nil
		},
	})
	return cmd
}
