package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/checkpoint"
	"github.com/tower-dev/breakglass/evidence/tlog"
)

func newAuditCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Check the hash-chained audit log"}
	var signerOpts signerFlags
	var checkpoints, rekorKey string
	verify := &cobra.Command{
		Use:   "verify FILE",
		Short: "Check every event's hash, the chain between them, and the anchored checkpoints; - reads standard input",
		Long: `Check that every event matches its hash, names the hash of the event before it,
and that no sequence number is missing: an edited, removed, inserted or
reordered event is reported with its line, and the command exits non-zero.

The chain alone cannot show a log cut short at its end, or one rewritten
whole with every hash recomputed. The relay signs the chain's head and
anchors it in the transparency log periodically and at shutdown; with
--checkpoints DIR (the checkpoints copied from the evidence store, each
<seq>.json beside its <seq>.rekor-bundle.json) and the relay's key pinned
(--key, or the --certificate-* flags), every checkpoint's signature and log
entry are checked, and the log must hold each checkpoint's event and reach
the newest.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			var cps []audit.Checkpoint
			if checkpoints != "" {
				signer, err := signerOpts.signer(cmd.Context())
				if err != nil {
					return err
				}
				if signer == nil {
					return errors.New("--checkpoints: a checkpoint proves something only with the relay's key pinned: drop --integrity-only")
				}
				if cps, err = readCheckpoints(cmd, checkpoints, rekorKey, *signer); err != nil {
					return err
				}
			} else if signerOpts.key != "" || signerOpts.identity != "" || signerOpts.identityRegExp != "" {
				return errors.New("--key and --certificate-* check the checkpoints: pass --checkpoints DIR")
			}
			r := cmd.InOrStdin()
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			n, err := audit.VerifyAgainst(r, cps)
			if err != nil {
				return fmt.Errorf("%s: after %d good events: %w", args[0], n, err)
			}
			if len(cps) == 0 {
				fmt.Fprintf(w, "%s: %d events, chain intact (without --checkpoints a log cut at its end or re-chained whole is not detected)\n", args[0], n)
				return nil
			}
			fmt.Fprintf(w, "%s: %d events, chain intact, holding all %d anchored checkpoints up to seq %d\n", args[0], n, len(cps), cps[len(cps)-1].Seq)
			return nil
		},
	}
	signerOpts.add(verify)
	verify.Flags().StringVar(&checkpoints, "checkpoints", "", "a folder of the chain's anchored checkpoints, copied from the evidence store")
	verify.Flags().StringVar(&rekorKey, "rekor-public-key", "", "the transparency log's public key (PEM), from a source you trust")
	cmd.AddCommand(verify)
	return cmd
}

// readCheckpoints reads and checks every checkpoint in dir: signed by the
// pinned signer and logged; sorted by sequence number.
func readCheckpoints(cmd *cobra.Command, dir, rekorKeyFile string, signer tlog.Signer) ([]audit.Checkpoint, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var logKey []byte
	if rekorKeyFile != "" {
		if logKey, err = os.ReadFile(rekorKeyFile); err != nil {
			return nil, err
		}
	}
	var cps []audit.Checkpoint
	var failed error
	for _, name := range names {
		if !checkpoint.NamesCheckpoint(name) {
			continue
		}
		cp, err := readCheckpoint(cmd, name, logKey, signer)
		if err != nil {
			// Anyone with the store's keys can add objects there: one that
			// the relay did not sign is reported and passed over.
			fmt.Fprintf(cmd.OutOrStdout(), "MISMATCH  %s: %v (passed over)\n", filepath.Base(name), err)
			failed = errors.Join(failed, err)
			continue
		}
		cps = append(cps, cp)
	}
	if len(cps) == 0 {
		return nil, fmt.Errorf("--checkpoints: no checkpoint in %s signed by the pinned key: %w", dir, failed)
	}
	if logKey == nil {
		fmt.Fprintln(cmd.OutOrStdout(), "note      the log's key is taken from the bundles; pass --rekor-public-key to check it against yours")
	}
	sort.Slice(cps, func(i, j int) bool { return cps[i].Seq < cps[j].Seq })
	return cps, nil
}

// readCheckpoint reads one checkpoint and checks it was signed by signer
// and logged.
func readCheckpoint(cmd *cobra.Command, name string, logKey []byte, signer tlog.Signer) (audit.Checkpoint, error) {
	body, err := os.ReadFile(name)
	if err != nil {
		return audit.Checkpoint{}, err
	}
	var cp audit.Checkpoint
	if err := json.Unmarshal(body, &cp); err != nil || cp.Seq == 0 || cp.Hash == "" {
		return audit.Checkpoint{}, errors.New("not an audit checkpoint")
	}
	b, err := readBundleFile(strings.TrimSuffix(name, ".json") + checkpoint.BundleSuffix)
	if err != nil {
		return audit.Checkpoint{}, err
	}
	key := logKey
	if key == nil {
		key = b.RekorPublicKey
	}
	if _, err := b.VerifySigned(cmd.Context(), body, key, signer); err != nil {
		return audit.Checkpoint{}, err
	}
	return cp, nil
}
