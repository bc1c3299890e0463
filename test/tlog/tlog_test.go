// Package tlog_test anchors recordings' manifests in a real Rekor (on
// Trillian and PostgreSQL, started by the test) and verifies the bundles.
package tlog_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/tower-dev/breakglass/evidence/tlog"
	"github.com/tower-dev/breakglass/localplane/rekor"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

var log *rekor.Log

func TestMain(m *testing.M) {
	os.Exit(prereq.Run(m, run, append(append(prereq.ControlPlane, prereq.Cosign), prereq.Rekor...)...))
}

func run(m *testing.M) int {
	var err error
	if log, err = rekor.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := log.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	return m.Run()
}

// relayKey is a signing key for the relay, made at test time.
func relayKey(t testing.TB) signature.SignerVerifier {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return sv
}

func anchorer(t testing.TB) *tlog.Anchorer {
	return &tlog.Anchorer{URL: log.URL, Signer: relayKey(t), Backoff: 100 * time.Millisecond}
}

func manifest(n int) []byte {
	return []byte(fmt.Sprintf(`{"session":"shop/s-%d","files":{"recording.cast":"%064x"}}`, n, n))
}

// TestAnchorAndVerify: an anchored manifest verifies offline; a flipped
// byte, a tampered proof or another log's key does not; submitting the same
// signed manifest again finds the same entry.
func TestAnchorAndVerify(t *testing.T) {
	ctx := context.Background()
	a := anchorer(t)
	m := manifest(1)
	b, err := a.Anchor(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if b.UUID == "" || b.Entry.LogIndex == nil || b.Entry.Verification == nil || b.Entry.Verification.SignedEntryTimestamp == nil {
		t.Fatalf("the bundle: %+v", b)
	}
	if err := b.Verify(ctx, m, b.RekorPublicKey); err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), m...)
	flipped[10] ^= 1
	if err := b.Verify(ctx, flipped, b.RekorPublicKey); err == nil || !strings.Contains(err.Error(), "SHA-256 differs") {
		t.Fatalf("a flipped byte: %v", err)
	}
	tampered := *b
	proof := *b.Entry.Verification.InclusionProof
	root := []byte(*proof.RootHash)
	if root[0] == 'a' {
		root[0] = 'b'
	} else {
		root[0] = 'a'
	}
	rootHash := string(root)
	proof.RootHash = &rootHash
	verification := *b.Entry.Verification
	verification.InclusionProof = &proof
	tampered.Entry.Verification = &verification
	if err := tampered.Verify(ctx, m, b.RekorPublicKey); err == nil {
		t.Fatal("a tampered inclusion proof verified")
	}
	// Another log's key: the relay's own public key stands in for it.
	if err := b.Verify(ctx, m, b.PublicKey); err == nil {
		t.Fatal("the bundle verified with a key that is not the log's")
	}
	// A retry of the same signed manifest (its first answer lost) finds
	// the entry instead of writing it twice.
	signed, err := a.Sign(manifest(3))
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.Submit(ctx, signed)
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.Submit(ctx, signed)
	if err != nil || again.UUID != first.UUID {
		t.Fatalf("submitting again: %v, uuid %s vs %s", err, again.UUID, first.UUID)
	}
}

// TestFaultRekorDownThenUp: with the log stopped, the anchor is pending and
// retried; once the log is back it is anchored, and it verifies.
func TestFaultRekorDownThenUp(t *testing.T) {
	ctx := context.Background()
	a := anchorer(t)
	if err := log.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = log.Resume()
		}
	}()
	var pending atomic.Int32
	done := make(chan *tlog.Bundle, 1)
	errc := make(chan error, 1)
	m := manifest(2)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	go func() {
		b, err := a.AnchorWithRetry(rctx, m, func(error) { pending.Add(1) })
		if err != nil {
			errc <- err
			return
		}
		done <- b
	}()
	cluster.Eventually(t, 30*time.Second, "an attempt failed while the log was down", func() (bool, error) {
		return pending.Load() > 0, nil
	})
	select {
	case <-done:
		t.Fatal("anchored while the log was down")
	default:
	}
	if err := log.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	select {
	case b := <-done:
		if err := b.Verify(ctx, m, b.RekorPublicKey); err != nil {
			t.Fatal(err)
		}
		t.Logf("anchored after %d failed attempts", pending.Load())
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(time.Minute):
		t.Fatal("not anchored after the log came back")
	}
}

// BenchmarkAnchor: from a finalized manifest to a verified bundle on the
// local Rekor (the p95 target is 2 s).
func BenchmarkAnchor(b *testing.B) {
	ctx := context.Background()
	a := anchorer(b)
	var took []time.Duration
	for b.Loop() {
		m := manifest(int(time.Now().UnixNano()))
		start := time.Now()
		if _, err := a.Anchor(ctx, m); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "ms-p50")
	b.ReportMetric(float64(took[len(took)*95/100].Milliseconds()), "ms-p95")
}
