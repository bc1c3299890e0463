package tlog_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/checkpoint"
	"github.com/tower-dev/breakglass/evidence/recording"
)

// TestAuditCheckpoints: the relay's audit chain, its head signed and
// anchored in the real Rekor twice; `audit verify` with the checkpoints and
// the relay's key pinned passes the genuine log, and fails one truncated
// before the last checkpoint, one re-chained whole (an event edited and
// every hash after it recomputed), and checkpoints signed by another key.
// A relay restarted without an audit file continues from the checkpoint.
func TestAuditCheckpoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := &recording.Dir{Root: filepath.Join(dir, "store")}
	file, last, err := audit.OpenFile(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	relay := anchorer(t)
	l := audit.NewLog(last, nil, file)
	cp := &checkpoint.Keeper{Log: l, Chain: "relay", Store: store, Anchorer: relay, Retention: time.Hour}
	record := func(kinds ...string) {
		for _, k := range kinds {
			if _, err := l.Record(ctx, audit.Event{Kind: k, Actor: "bob@example.com", Session: "shop/s1"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	record("request", "approve", "grant")
	if err := cp.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	record("attach", "end")
	if err := cp.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cp.Checkpoint(ctx); err != nil { // the head did not move: nothing new
		t.Fatal(err)
	}
	keys, _ := store.List(ctx, checkpoint.Prefix("relay"))
	if len(keys) != 6 {
		t.Fatalf("the store holds %v, want two checkpoints with their two bundles each", keys)
	}
	// Each checkpoint's anchor is a Sigstore bundle too: stock cosign
	// checks it with the relay's key.
	relayPub := writePublicKey(t, relay.Signer)
	for _, k := range keys {
		if !checkpoint.NamesCheckpoint(k) {
			continue
		}
		body, err := store.Get(ctx, k, "")
		if err != nil {
			t.Fatal(err)
		}
		sb, err := store.Get(ctx, strings.TrimSuffix(k, ".json")+checkpoint.SigstoreSuffix, "")
		if err != nil {
			t.Fatal(err)
		}
		if out, err := cosignVerifyBlob(t, v1Log(t), body, sb, nil, "--key", relayPub); err != nil {
			t.Fatalf("cosign verify-blob of checkpoint %s: %v\n%s", k, err, out)
		}
	}
	checkpoints := filepath.Join(dir, "checkpoints")
	if err := os.CopyFS(checkpoints, os.DirFS(filepath.Join(store.Root, checkpoint.Prefix("relay")))); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "audit.log")
	pub, logKey := writePublicKey(t, relay.Signer), writeLogKey(t)
	pinned := []string{"--checkpoints", checkpoints, "--key", pub, "--rekor-public-key", logKey}
	out, err := cli(append([]string{"audit", "verify", logFile}, pinned...)...)
	if err != nil || !strings.Contains(out, "5 events, chain intact, holding all 2 anchored checkpoints up to seq 5") {
		t.Fatalf("the genuine log: %v\n%s", err, out)
	}

	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(raw), "\n"), "\n")
	truncated := filepath.Join(dir, "truncated.log")
	if err := os.WriteFile(truncated, []byte(strings.Join(lines[:4], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cli("audit", "verify", truncated); err != nil {
		t.Fatalf("without checkpoints a truncated log still looks intact (why they exist): %v\n%s", err, out)
	}
	if out, err := cli(append([]string{"audit", "verify", truncated}, pinned...)...); err == nil || !strings.Contains(out, "it was truncated") {
		t.Fatalf("a truncated log: %v\n%s", err, out)
	}

	// Re-chained: the approval's actor rewritten, every hash after it recomputed.
	var forged strings.Builder
	rechained := audit.NewLog(audit.Event{}, nil, &audit.Writer{W: &forged})
	for _, line := range lines {
		var e audit.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Kind == "approve" {
			e.Actor = "mallory@example.com"
		}
		if _, err := rechained.Record(ctx, audit.Event{Kind: e.Kind, Actor: e.Actor, Session: e.Session}); err != nil {
			t.Fatal(err)
		}
	}
	rechainedFile := filepath.Join(dir, "rechained.log")
	if err := os.WriteFile(rechainedFile, []byte(forged.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cli(append([]string{"audit", "verify", rechainedFile}, pinned...)...); err == nil || !strings.Contains(out, "re-chained") {
		t.Fatalf("a re-chained log: %v\n%s", err, out)
	}
	// Checkpoints re-anchored by a forger for the re-chained log: not the relay's key.
	forgedStore := &recording.Dir{Root: filepath.Join(dir, "forged")}
	forgedLog := audit.NewLog(audit.Event{}, nil, &audit.Writer{W: &strings.Builder{}})
	for i := 0; i < 5; i++ {
		if _, err := forgedLog.Record(ctx, audit.Event{Kind: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := (&checkpoint.Keeper{Log: forgedLog, Chain: "relay", Store: forgedStore, Anchorer: anchorer(t), Retention: time.Hour}).Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	forgedCheckpoints := filepath.Join(forgedStore.Root, checkpoint.Prefix("relay"))
	if out, err := cli("audit", "verify", rechainedFile, "--checkpoints", forgedCheckpoints, "--key", pub, "--rekor-public-key", logKey); err == nil || !strings.Contains(out, "signed by another key") {
		t.Fatalf("checkpoints signed by another key: %v\n%s", err, out)
	}

	// Someone with the store's keys plants a later checkpoint: unsigned by
	// the relay, it is passed over.
	planted := checkpoint.Prefix("relay") + "00000000000000000099-ffffffffffffffff"
	for k, v := range map[string]string{".json": `{"chain":"relay","seq":99,"hash":"ff","time":"2026-11-30T10:00:00Z"}`, checkpoint.BundleSuffix: "{}"} {
		if _, err := store.Put(ctx, planted+k, []byte(v), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// A relay restarted without its file goes on from the newest checkpoint.
	latest, err := checkpoint.Latest(ctx, store, "relay", relay)
	if err != nil || latest.Seq != 5 {
		t.Fatalf("the latest checkpoint: %+v, %v", latest, err)
	}
	head, hash := l.Head()
	if latest.Hash != hash || head != 5 {
		t.Fatalf("the checkpoint names %d/%s, the chain's head is %d/%s", latest.Seq, latest.Hash, head, hash)
	}
}
