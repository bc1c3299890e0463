package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sigstore/rekor/pkg/client"
	"github.com/sigstore/rekor/pkg/generated/client/entries"
	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
)

func newRecordingVerifyCommand() *cobra.Command {
	var rekorKey string
	var online bool
	cmd := &cobra.Command{
		Use:   "verify DIR",
		Short: "Check a recording's files against its manifest, and the manifest against the transparency log",
		Long: `Check every file of a recording (recording.cast, transcript.raw) in DIR
against the SHA-256 and size its manifest.json names, and print the manifest's
own SHA-256: the value anchored in the transparency log. When DIR holds
` + tlog.BundleFile + `, also check, offline, that the log's entry names that SHA-256
and the relay's signature of the manifest, and that its inclusion proof,
checkpoint and signed entry timestamp verify with the log's public key
(--rekor-public-key; without it, the key kept in the bundle, which proves less).
--online also fetches the entry from the log and compares. Exits non-zero
naming the first thing that does not match.

The same checks with stock tools:

  jq -r '.files | to_entries[] | "\(.value.sha256)  \(.key)"' manifest.json | sha256sum -c
  sha256sum manifest.json
  rekor-cli get --rekor_server URL --uuid UUID      # the entry names that SHA-256
  jq -r .publicKey rekor-bundle.json | base64 -d > relay.pub
  jq -r .signature rekor-bundle.json | base64 -d > manifest.sig
  cosign verify-blob --key relay.pub --signature manifest.sig --insecure-ignore-tlog manifest.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			manifest, checks, err := recording.VerifyDir(dir)
			w := cmd.OutOrStdout()
			for _, c := range checks {
				if c.Verified {
					fmt.Fprintf(w, "ok        %-18s sha256:%s\n", c.Name, c.Got)
				} else {
					fmt.Fprintf(w, "MISMATCH  %-18s %s\n", c.Name, c.Problem)
				}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "manifest  sha256:%s\n", manifest)
			raw, err := os.ReadFile(filepath.Join(dir, tlog.BundleFile))
			if errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(w, "not anchored: no %s beside the recording\n", tlog.BundleFile)
				if online {
					return errors.New("--online: the recording has no anchor to check")
				}
				return nil
			}
			if err != nil {
				return err
			}
			var b tlog.Bundle
			if err := json.Unmarshal(raw, &b); err != nil {
				return fmt.Errorf("%s: %w", tlog.BundleFile, err)
			}
			body, err := os.ReadFile(filepath.Join(dir, recording.ManifestFile))
			if err != nil {
				return err
			}
			key := b.RekorPublicKey
			if rekorKey != "" {
				if key, err = os.ReadFile(rekorKey); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(w, "note      the log's key is taken from the bundle; pass --rekor-public-key to check it against yours")
			}
			if err := b.Verify(cmd.Context(), body, key); err != nil {
				fmt.Fprintf(w, "MISMATCH  %-18s %v\n", tlog.BundleFile, err)
				return err
			}
			fmt.Fprintf(w, "ok        %-18s entry %s, log index %d, %s\n", tlog.BundleFile, b.UUID, *b.Entry.LogIndex, b.RekorURL)
			if !online {
				return nil
			}
			rc, err := client.GetRekorClient(b.RekorURL)
			if err != nil {
				return err
			}
			got, err := rc.Entries.GetLogEntryByUUIDContext(cmd.Context(), entries.NewGetLogEntryByUUIDParams().WithEntryUUID(b.UUID))
			if err != nil {
				return fmt.Errorf("--online: %w", err)
			}
			for _, e := range got.Payload {
				if e.Body != b.Entry.Body || e.LogIndex == nil || *e.LogIndex != *b.Entry.LogIndex {
					return errors.New("--online: the log's entry differs from the bundle's")
				}
				fmt.Fprintf(w, "ok        online             the log holds the same entry at index %d\n", *e.LogIndex)
				return nil
			}
			return errors.New("--online: the log has no such entry")
		},
	}
	cmd.Flags().StringVar(&rekorKey, "rekor-public-key", "", "the transparency log's public key (PEM), from a source you trust")
	cmd.Flags().BoolVar(&online, "online", false, "also fetch the entry from the log and compare")
	return cmd
}
