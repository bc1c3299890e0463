package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/sigstore/rekor/pkg/client"
	"github.com/sigstore/rekor/pkg/generated/client/entries"

	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
)

// anchorCheck is what recording verify checks of a recording's anchor.
type anchorCheck struct {
	dir, rekorKeyFile string
	manifest          []byte
	// signer is nil for an integrity-only check.
	signer *tlog.Signer
	online bool
	// entryID is the log entry the Session names ("" without --session).
	entryID string
}

// checkAnchor checks the bundles beside the recording. With a pinned
// signer, the one that verifies counts: a bundle planted under the usual
// name by someone with the store's keys (the relay then keeps its own
// beside it) is reported and passed over, never trusted.
func checkAnchor(ctx context.Context, w io.Writer, c anchorCheck) error {
	names, err := anchorFiles(c.dir, tlog.BundleFile)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		if c.signer != nil {
			return fmt.Errorf("not anchored: no %s, so nothing proves who made the recording (--integrity-only checks the files alone)", tlog.BundleFile)
		}
		fmt.Fprintf(w, "not anchored: no %s beside the recording\n", tlog.BundleFile)
		return integrityOnly(w, c.online)
	}
	var logKey []byte
	if c.rekorKeyFile != "" {
		if logKey, err = os.ReadFile(c.rekorKeyFile); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(w, "note      the log's key is taken from the bundle; pass --rekor-public-key to check it against yours")
	}
	var failed error
	for _, name := range names {
		b, err := readBundleFile(filepath.Join(c.dir, name))
		if err == nil {
			err = verifyBundle(ctx, w, b, c, logKey)
		}
		if err != nil {
			fmt.Fprintf(w, "MISMATCH  %-18s %v\n", name, err)
			failed = errors.Join(failed, fmt.Errorf("%s: %w", name, err))
			continue
		}
		fmt.Fprintf(w, "ok        %-18s entry %s, log index %d, %s\n", name, b.UUID, *b.Entry.LogIndex, b.RekorURL)
		if c.online {
			if err := checkOnline(ctx, w, b); err != nil {
				return err
			}
		}
		if c.signer == nil {
			return integrityOnly(w, false)
		}
		if logKey == nil {
			return checkSigstore(w, c, b.RekorPublicKey)
		}
		return checkSigstore(w, c, logKey)
	}
	return failed
}

// checkSigstore checks the anchor's standard Sigstore bundles beside the
// recording (manifest.sigstore.json, and any kept under a name of its own),
// as cosign verify-blob does: one must verify with the pinned signer and the
// log's key. Recordings anchored before relays wrote them have none.
func checkSigstore(w io.Writer, c anchorCheck, logKey []byte) error {
	names, err := anchorFiles(c.dir, tlog.SigstoreBundleFile)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		fmt.Fprintf(w, "note      no %s beside the recording (anchored before relays wrote one)\n", tlog.SigstoreBundleFile)
		return nil
	}
	var failed error
	for _, name := range names {
		raw, err := os.ReadFile(filepath.Join(c.dir, name))
		if err == nil {
			var who string
			if who, err = tlog.VerifySigstore(raw, c.manifest, logKey, *c.signer); err == nil {
				fmt.Fprintf(w, "ok        %-18s a Sigstore bundle signed by %s, as cosign verify-blob checks it\n", name, who)
				return nil
			}
		}
		fmt.Fprintf(w, "MISMATCH  %-18s %v\n", name, err)
		failed = errors.Join(failed, fmt.Errorf("%s: %w", name, err))
	}
	return failed
}

func verifyBundle(ctx context.Context, w io.Writer, b *tlog.Bundle, c anchorCheck, logKey []byte) error {
	key := logKey
	if key == nil {
		key = b.RekorPublicKey
	}
	if c.entryID != "" && b.UUID != c.entryID {
		return fmt.Errorf("the entry %s is not the one the Session names (%s)", b.UUID, c.entryID)
	}
	if c.signer == nil {
		return b.Verify(ctx, c.manifest, key)
	}
	who, err := b.VerifySigned(ctx, c.manifest, key, *c.signer)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "ok        signer             signed by %s\n", who)
	return nil
}

// anchorFiles are the anchors of one kind beside a recording: the usual
// name (rekor-bundle.json, manifest.sigstore.json) first, then any kept
// under a name of their own (recording.AltName's).
func anchorFiles(dir, usual string) ([]string, error) {
	others, err := filepath.Glob(filepath.Join(dir, recording.AltName(usual, "*")))
	if err != nil {
		return nil, err
	}
	var names []string
	if _, err := os.Stat(filepath.Join(dir, usual)); err == nil {
		names = append(names, usual)
	}
	sort.Strings(others)
	for _, o := range others {
		names = append(names, filepath.Base(o))
	}
	return names, nil
}

// describeManifest says whose recording the manifest claims to be, and
// what it says is missing or was left out.
func describeManifest(w io.Writer, m recording.Manifest) {
	if m.Version >= 2 {
		fmt.Fprintf(w, "manifest  names %s/%s/%s (UID %s), started %s, ended abnormally: %t\n",
			m.Cluster, m.Namespace, m.Name, m.UID, m.Started.Format("2006-01-02T15:04:05Z"), m.EndedAbnormally)
	} else {
		fmt.Fprintf(w, "manifest  version %d names only %q\n", m.Version, m.Session)
	}
	if len(m.MissingSegments) > 0 {
		fmt.Fprintf(w, "note      segments missing from the store (a gap in the recording): %v\n", m.MissingSegments)
	}
	if len(m.ForeignSegments) > 0 {
		fmt.Fprintf(w, "note      objects among the segments the recorder did not write, left out: %v\n", m.ForeignSegments)
	}
}

func integrityOnly(w io.Writer, online bool) error {
	if online {
		return errors.New("--online: the recording has no anchor to check")
	}
	fmt.Fprintln(w, "INTEGRITY ONLY: the files match their manifest; nothing here proves who made the recording")
	return nil
}

func readBundleFile(path string) (*tlog.Bundle, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var b tlog.Bundle
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if b.Entry.LogIndex == nil {
		return nil, fmt.Errorf("%s: the entry has no log index", filepath.Base(path))
	}
	return &b, nil
}

func checkOnline(ctx context.Context, w io.Writer, b *tlog.Bundle) error {
	if b.TlogEntry != nil {
		return errors.New("--online: a Rekor v2 log serves no lookup of an entry; its inclusion proof and signed checkpoint were checked offline")
	}
	rc, err := client.GetRekorClient(b.RekorURL)
	if err != nil {
		return err
	}
	got, err := rc.Entries.GetLogEntryByUUIDContext(ctx, entries.NewGetLogEntryByUUIDParams().WithEntryUUID(b.UUID))
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
}
