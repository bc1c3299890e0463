package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
)

// signerFlags pin who must have signed: the relay's key, or a keyless
// identity, never what the bundle under check says.
type signerFlags struct {
	key                                     string
	identity, identityRegExp, issuer, roots string
	integrityOnly                           bool
}

func (f *signerFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.key, "key", "", "the relay's public key: a PEM file, k8s://namespace/secret or a KMS URI (as cosign reads keys)")
	fl.StringVar(&f.identity, "certificate-identity", "", "keyless: the relay's identity in its signing certificate")
	fl.StringVar(&f.identityRegExp, "certificate-identity-regexp", "", "keyless: a pattern for that identity")
	fl.StringVar(&f.issuer, "certificate-oidc-issuer", "", "keyless: the issuer of that identity")
	fl.StringVar(&f.roots, "certificate-roots", "", "keyless: the CA certificates (PEM) that issue the relay's signing certificates")
	fl.BoolVar(&f.integrityOnly, "integrity-only", false, "check only that the files match their manifest (and the log, if anchored): proves nothing about who made the recording")
}

// signer is the pinned signer, or nil for an integrity-only check.
func (f *signerFlags) signer(ctx context.Context) (*tlog.Signer, error) {
	keyless := f.identity != "" || f.identityRegExp != "" || f.issuer != "" || f.roots != ""
	switch {
	case f.integrityOnly && (f.key != "" || keyless):
		return nil, errors.New("--integrity-only checks no signer: drop it, or drop --key and the --certificate-* flags")
	case f.integrityOnly:
		return nil, nil
	case f.key != "" && keyless:
		return nil, errors.New("pin one signer: --key or the --certificate-* flags, not both")
	case f.key != "":
		s, err := tlog.KeySigner(ctx, f.key)
		return &s, err
	case keyless:
		if f.roots == "" {
			return nil, errors.New("--certificate-roots: the CA that issues the relay's certificates is required for a keyless identity")
		}
		roots, err := os.ReadFile(f.roots)
		if err != nil {
			return nil, fmt.Errorf("--certificate-roots: %w", err)
		}
		s, err := tlog.KeylessSigner(roots, f.issuer, f.identity, f.identityRegExp)
		if err != nil {
			return nil, fmt.Errorf("--certificate-*: %w", err)
		}
		return &s, nil
	}
	return nil, errors.New("pin the signer: --key (the relay's public key, from a source you trust) or " +
		"--certificate-identity and --certificate-oidc-issuer with --certificate-roots; " +
		"--integrity-only checks the files alone and proves nothing about who made them")
}

func newRecordingVerifyCommand() *cobra.Command {
	var signerOpts signerFlags
	var rekorKey, sessionFile, cluster string
	var online bool
	cmd := &cobra.Command{
		Use:   "verify DIR",
		Short: "Check a recording: its files, its signer, its Session and the transparency log",
		Long: `Check every file of a recording (recording.cast, transcript.raw) in DIR
against the SHA-256 and size its manifest.json names; that the manifest was
signed by the signer you pin (--key, or a keyless identity with the
--certificate-* flags) and logged in the transparency log (` + tlog.BundleFile + `:
the entry names the manifest's SHA-256 and the signature, and its inclusion
proof, checkpoint and signed entry timestamp verify with the log's key,
--rekor-public-key); and, with --session, that it is the recording of that
Session (exported with kubectl get session NAME -o yaml): the manifest's
SHA-256, cluster, namespace, name and UID are the ones the Session records.
--online also fetches the entry from the log and compares. Exits non-zero
naming the first thing that does not match.

Without a pinned signer the check fails, unless --integrity-only asks for the
files alone: that proves nothing about who made the recording (anyone can
write a manifest, sign it with a key of their own and anchor it).

The same checks with stock tools are in docs/evidence.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			signer, err := signerOpts.signer(ctx)
			if err != nil {
				return err
			}
			dir, w := args[0], cmd.OutOrStdout()
			var session *v1alpha1.Session
			if sessionFile != "" {
				if session, err = readExportedSession(sessionFile); err != nil {
					fmt.Fprintf(w, "MISMATCH  session            %v\n", err)
					return err
				}
			}
			manifestFile := manifestIn(dir, session)
			manifest, checks, err := recording.VerifyManifest(dir, manifestFile)
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
			body, err := os.ReadFile(filepath.Join(dir, manifestFile))
			if err != nil {
				return err
			}
			if m, err := recording.ParseManifest(body); err == nil {
				describeManifest(w, m)
			}
			var entryID string
			if session != nil {
				if entryID, err = checkAgainstSession(w, body, manifest, session, cluster); err != nil {
					fmt.Fprintf(w, "MISMATCH  session            %v\n", err)
					return err
				}
			} else {
				fmt.Fprintln(w, "note      not checked against a Session: pass --session (kubectl get session NAME -o yaml) to check whose recording it is")
			}
			if signer != nil && signer.Keyless != nil && rekorKey == "" {
				return errors.New("--rekor-public-key: a keyless identity is checked at the time the log took the entry, so the log's key must be yours, not the bundle's")
			}
			return checkAnchor(ctx, w, anchorCheck{dir: dir, manifest: body, signer: signer, rekorKeyFile: rekorKey, online: online, entryID: entryID})
		},
	}
	signerOpts.add(cmd)
	cmd.Flags().StringVar(&rekorKey, "rekor-public-key", "", "the transparency log's public key (PEM), from a source you trust")
	cmd.Flags().StringVar(&sessionFile, "session", "", "the Session the recording should belong to, exported as YAML or JSON")
	cmd.Flags().StringVar(&cluster, "cluster", "", "the cluster the Session is on, as the relay names it (default: the one its evidence records)")
	cmd.Flags().BoolVar(&online, "online", false, "also fetch the entry from the log and compare")
	return cmd
}
