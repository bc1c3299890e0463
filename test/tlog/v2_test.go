package tlog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
	"github.com/tower-dev/breakglass/localplane/rekor"
	"github.com/tower-dev/breakglass/relay/live"
)

// TestAnchorRekorV2: a manifest anchored in a real Rekor v2 (rekor-tiles)
// verifies offline with the relay's key and the log's, as the older bundle,
// as a Sigstore bundle in sigstore-go and in the stock cosign CLI, and with
// recording verify; another key, another log or a flipped byte does not.
func TestAnchorRekorV2(t *testing.T) {
	ctx := context.Background()
	v2, logPub := startV2(t)
	relay := &tlog.Anchorer{URL: v2.URL, Signer: relayKey(t), Version: 2, LogKey: v2.PublicKey, Backoff: 100 * time.Millisecond}
	// A recording, to anchor its manifest.
	store := &recording.Dir{Root: t.TempDir()}
	ref := recording.Ref{Cluster: "test", Namespace: "shop", Name: "s-v2", UID: "uid-v2"}
	rec, err := recording.New(ctx, store, ref, recording.Options{RetainUntil: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Output(ctx, []byte("$ ls\r\n")); err != nil {
		t.Fatal(err)
	}
	f, err := rec.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := f.Body
	b, err := relay.Anchor(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if b.TlogEntry == nil || b.Entry.LogIndex == nil || b.UUID != fmt.Sprintf("v2-%d", *b.Entry.LogIndex) {
		t.Fatalf("the v2 anchor: uuid %q, entry %s", b.UUID, b.TlogEntry)
	}
	relayPub := writePublicKey(t, relay.Signer)
	pinned, err := tlog.KeySigner(ctx, relayPub)
	if err != nil {
		t.Fatal(err)
	}
	if who, err := b.VerifySigned(ctx, m, v2.PublicKey, pinned); err != nil || who != "the pinned relay key" {
		t.Fatalf("the v2 anchor with the relay's key: %q, %v", who, err)
	}
	forger := &tlog.Anchorer{URL: v2.URL, Signer: relayKey(t), Version: 2, LogKey: v2.PublicKey}
	forged, err := forger.Anchor(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := forged.VerifySigned(ctx, m, v2.PublicKey, pinned); err == nil {
		t.Fatal("a manifest re-signed by another key and anchored anew in v2 verified with the relay's key")
	}
	v1Key, err := log.PublicKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.VerifySigned(ctx, m, v1Key, pinned); err == nil {
		t.Fatal("the v2 anchor verified with another log's key")
	}
	// The entry's name is what its proof proves: another one is refused.
	renamed := *b
	renamed.UUID = fmt.Sprintf("v2-%d", *b.Entry.LogIndex+1)
	if _, err := renamed.VerifySigned(ctx, m, v2.PublicKey, pinned); err == nil || !strings.Contains(err.Error(), "another entry than the one its inclusion proof proves") {
		t.Fatalf("a v2 anchor renamed to another entry: %v", err)
	}
	flipped := append([]byte(nil), m...)
	flipped[3] ^= 1
	if err := b.Verify(ctx, flipped, v2.PublicKey); err == nil {
		t.Fatal("the v2 anchor verified another manifest")
	}

	sb, err := b.Sigstore(m)
	if err != nil {
		t.Fatal(err)
	}
	// A v2 log's checkpoints are signed in the name of its URL's host.
	trusted := trustedLog{url: "https://" + v2.Origin, key: v2.PublicKey, origin: v2.Origin}
	if out, err := cosignVerifyBlob(t, trusted, m, sb, nil, "--key", relayPub); err != nil {
		t.Fatalf("cosign verify-blob of the v2 anchor: %v\n%s", err, out)
	}
	if out, err := cosignVerifyBlob(t, trusted, m, sb, nil, "--key", writePublicKey(t, forger.Signer)); err == nil {
		t.Fatalf("cosign verify-blob passed the v2 anchor with another key:\n%s", out)
	}

	// Kept beside the recording as the relay keeps it, it passes recording verify.
	if _, err := recording.KeepBundle(ctx, store, ref, b, m, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	out, err := verifyCLI(filepath.Join(store.Root, ref.Prefix()), "--key", relayPub, "--rekor-public-key", logPub)
	if err != nil || !strings.Contains(out, "a Sigstore bundle signed by the pinned relay key") {
		t.Fatalf("recording verify of a v2 anchor: %v\n%s", err, out)
	}
	if out, err := verifyCLI(filepath.Join(store.Root, ref.Prefix()), "--key", relayPub, "--rekor-public-key", logPub, "--online"); err == nil || !strings.Contains(err.Error()+out, "serves no lookup") {
		t.Fatalf("recording verify --online of a v2 anchor: %v\n%s", err, out)
	}
}

// TestSessionAnchoredInRekorV2: a whole session on the real API server and
// the virtual node, its relay anchoring in a real Rekor v2: the Session
// names the entry by its proven index, and the recording passes recording
// verify against the exported Session, with the relay's and the log's keys.
func TestSessionAnchoredInRekorV2(t *testing.T) {
	ctx := context.Background()
	v2, logPub := startV2(t)
	b := newBed(t, "anchored-v2")
	store := &recording.Dir{Root: t.TempDir()}
	r := b.runner(store)
	r.Anchorer = &tlog.Anchorer{URL: v2.URL, Signer: b.sv, Version: 2, LogKey: v2.PublicKey, Backoff: 200 * time.Millisecond}
	run, err := live.Start(ctx, r, b.s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Write([]byte("echo anchored in v2\n")); err != nil {
		t.Fatal(err)
	}
	if err := run.End(ctx, "alice", v1alpha1.EndUser, ""); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.Session{}
	deadline := time.Now().Add(time.Minute)
	for {
		if err := b.c.Client.Get(ctx, client.ObjectKeyFromObject(b.s), got); err != nil {
			t.Fatal(err)
		}
		if ev := got.Status.Evidence; ev != nil && ev.EntryID != "" && !ev.AnchorPending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not anchored in Rekor v2 within a minute: %+v", got.Status.Evidence)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ev := got.Status.Evidence
	if ev.LogIndex == nil || ev.EntryID != fmt.Sprintf("v2-%d", *ev.LogIndex) {
		t.Fatalf("the Session names the v2 entry %q at index %v", ev.EntryID, ev.LogIndex)
	}
	dir := filepath.Join(store.Root, recording.RefOf("test", got).Prefix())
	out, err := verifyCLI(dir, "--key", writePublicKey(t, b.sv), "--rekor-public-key", logPub, "--session", exportSession(t, got))
	if err != nil || !strings.Contains(out, "a Sigstore bundle signed by the pinned relay key") || !strings.Contains(out, "ok        session") {
		t.Fatalf("recording verify of a session anchored in Rekor v2: %v\n%s", err, out)
	}
}

// startV2 starts a Rekor v2 for the test and writes its key where a
// reviewer pins it (logPub); the test stops it.
func startV2(t *testing.T) (_ *rekor.V2, logPub string) {
	t.Helper()
	v2, err := rekor.StartV2(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := v2.Stop(); err != nil {
			t.Error(err)
		}
	})
	logPub = filepath.Join(t.TempDir(), "rekor-v2.pub")
	if err := os.WriteFile(logPub, v2.PublicKey, 0o600); err != nil {
		t.Fatal(err)
	}
	return v2, logPub
}
