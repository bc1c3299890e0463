package tlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/live"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// TestFaultSessionAnchoredAfterRekorComesBack: a session ends while the log is
// down; the Session says "anchor pending", the end is not held up; once the
// log is back the bundle is beside the recording, the Session names the
// entry, and the recording verifies offline and online with the CLI's checks.
// bed is a Flight cluster with the virtual node and an approved session s1
// on a running pod, as the portal.
type bed struct {
	c          *cluster.Cluster
	portal     *cluster.User
	s          *v1alpha1.Session
	ns         string
	debugImage string
	sv         signature.SignerVerifier
}

func newBed(t *testing.T, nsName string) *bed {
	t.Helper()
	ctx := context.Background()
	debugImage := cluster.DebugImage
	c, err := cluster.Start(ctx, cluster.Options{Profile: policies.Flight, DebugImages: []string{debugImage}, VirtualNode: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	ns := c.Namespace(t, nsName)
	c.RunningPod(t, ns, "web-1")
	portal, err := c.Portal()
	if err != nil {
		t.Fatal(err)
	}
	s := sessiontest.Make(ns, "s1").Reason("500s").Obj()
	if err := portal.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.Status = v1alpha1.SessionStatus{Phase: v1alpha1.PhaseApproved, Approval: &v1alpha1.Approval{By: "bob", At: metav1.Now(), Mode: v1alpha1.ModeLive}}
	if err := portal.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	return &bed{c: c, portal: portal, s: s, ns: ns, debugImage: debugImage, sv: relayKey(t)}
}

func (b *bed) runner(store recording.Store) *debugsession.Runner {
	return &debugsession.Runner{Cluster: "test", Client: b.portal.Client, Kube: b.portal.Kube, Config: b.portal.Config, Store: store, Clock: clock.RealClock{},
		DebugImage: b.debugImage, Grace: 2 * time.Minute, MaxTTL: 75 * time.Minute, Retention: time.Hour}
}

func TestFaultSessionAnchoredAfterRekorComesBack(t *testing.T) {
	b := newBed(t, "anchored")
	ctx := context.Background()
	c, s, ns := b.c, b.s, b.ns
	store := &recording.Dir{Root: t.TempDir()}
	r := b.runner(store)
	r.Anchorer = &tlog.Anchorer{URL: log.URL, Signer: b.sv, Backoff: 200 * time.Millisecond}
	run, err := live.Start(ctx, r, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Write([]byte("echo anchored\n")); err != nil {
		t.Fatal(err)
	}
	if err := log.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = run.End(ctx, "alice", v1alpha1.EndUser, "")
	ended := time.Since(start)
	if err != nil {
		_ = log.Resume()
		t.Fatal(err)
	}
	got := &v1alpha1.Session{}
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Evidence == nil || !got.Status.Evidence.AnchorPending || got.Status.Evidence.EntryID != "" {
		_ = log.Resume()
		t.Fatalf("with the log down, the Session's evidence: %+v", got.Status.Evidence)
	}
	time.Sleep(time.Second) // a few attempts fail
	if err := log.Resume(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for got.Status.Evidence.AnchorPending {
		if time.Now().After(deadline) {
			t.Fatal("not anchored a minute after the log came back")
		}
		time.Sleep(100 * time.Millisecond)
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			t.Fatal(err)
		}
	}
	ev := got.Status.Evidence
	if ev.EntryID == "" || ev.LogIndex == nil {
		t.Fatalf("the anchored evidence: %+v", ev)
	}
	t.Logf("the end took %s with the log down; anchored later as %s", ended, ev.EntryID)

	dir := filepath.Join(store.Root, recording.RefOf("test", got).Prefix())
	raw, err := os.ReadFile(filepath.Join(dir, tlog.BundleFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(ev.EntryID)) {
		t.Fatal("the bundle names another entry than the Session")
	}
	// The CLI's check, offline and online, pinned to the relay's key and
	// the log's, against the Session as kubectl exports it.
	relayPub, logPub, sessionFile := writePublicKey(t, b.sv), writeLogKey(t), exportSession(t, got)
	out, err := verifyCLI(dir, "--online", "--key", relayPub, "--rekor-public-key", logPub, "--session", sessionFile)
	if err != nil || !strings.Contains(out, "the log holds the same entry") || !strings.Contains(out, "signed by the pinned relay key") ||
		!strings.Contains(out, "a Sigstore bundle signed by the pinned relay key") ||
		!strings.Contains(out, "ok        session            test/"+ns+"/s1") {
		t.Fatalf("recording verify --online: %v\n%s", err, out)
	}
	if out, err := stockTools(t, dir, got, relayPub); err != nil {
		t.Fatalf("the stock-tools check of docs/evidence.md on the genuine recording: %v\n%s", err, out)
	}
	// What recording bundle makes of rekor-bundle.json alone (an anchor
	// from before relays kept Sigstore bundles) passes stock cosign too.
	converted, err := cli("recording", "bundle", dir)
	if err != nil {
		t.Fatalf("recording bundle: %v\n%s", err, converted)
	}
	manifestBody, err := os.ReadFile(filepath.Join(dir, recording.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := cosignVerifyBlob(t, v1Log(t), manifestBody, []byte(converted), nil, "--key", relayPub); err != nil {
		t.Fatalf("cosign verify-blob of what recording bundle printed: %v\n%s", err, out)
	}
	t.Run("re-signed by another key and anchored anew", func(t *testing.T) {
		forged := forgeAnchor(t, dir)
		if out, err := stockTools(t, forged, got, relayPub); err == nil || !strings.Contains(out, "failed to verify") {
			t.Fatalf("the stock-tools check passed a recording re-signed by another key: %v\n%s", err, out)
		}
		if out, err := verifyCLI(forged, "--key", relayPub, "--rekor-public-key", logPub); err == nil || !strings.Contains(err.Error()+out, "signed by another key") {
			t.Fatalf("a recording re-signed by a forger passed with the relay's key pinned: %v\n%s", err, out)
		}
		if out, err := verifyCLI(forged, "--rekor-public-key", logPub); err == nil || !strings.Contains(out, "pin the signer") {
			t.Fatalf("no signer pinned: %v\n%s", err, out)
		}
		// Planted under the usual name before the relay could write its own,
		// which it then keeps beside it: the pinned check passes over the
		// planted one and finds the relay's.
		genuine, err := os.ReadFile(filepath.Join(dir, tlog.BundleFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(forged, recording.AltBundleName(ev.EntryID)), genuine, 0o600); err != nil {
			t.Fatal(err)
		}
		genuineSigstore, err := os.ReadFile(filepath.Join(dir, tlog.SigstoreBundleFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(forged, recording.AltSigstoreBundleName(ev.EntryID)), genuineSigstore, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := verifyCLI(forged, "--key", relayPub, "--rekor-public-key", logPub)
		if err != nil || !strings.Contains(out, "MISMATCH  "+tlog.BundleFile) || !strings.Contains(out, "ok        "+recording.AltBundleName(ev.EntryID)) ||
			!strings.Contains(out, "MISMATCH  "+tlog.SigstoreBundleFile) || !strings.Contains(out, "ok        "+recording.AltSigstoreBundleName(ev.EntryID)) {
			t.Fatalf("a planted bundle beside the relay's: %v\n%s", err, out)
		}
	})
	manifest := filepath.Join(dir, recording.ManifestFile)
	body, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	// A flipped byte in the manifest: the files no longer match it, and the log's entry names another hash.
	if err := os.Chmod(manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	body[len(body)/2] ^= 1
	if err := os.WriteFile(manifest, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := verifyCLI(dir, "--key", relayPub); err == nil {
		t.Fatalf("a flipped byte in the manifest verified:\n%s", out)
	}
}

// TestFaultCrashedSessionSweptAndAnchored: the relay dies mid-session (its
// watcher stops: no more heartbeats); the sweeper ends the session, builds
// the recording from the segments streamed so far (marked as ended
// abnormally) and anchors it; it verifies with the CLI's checks.
func TestFaultCrashedSessionSweptAndAnchored(t *testing.T) {
	b := newBed(t, "crashed")
	ctx := context.Background()
	store := &recording.Dir{Root: t.TempDir()}
	r := b.runner(store)
	run, err := live.Start(ctx, r, b.s)
	if err != nil {
		t.Fatal(err)
	}
	v := run.Output(wire.Attached{Name: "alice", Typing: true})
	go func() { _, _ = io.Copy(io.Discard, v) }()
	relayCtx, die := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() {
		_, err := run.Enforce(relayCtx, debugsession.Limits{Idle: time.Hour, Disconnect: time.Hour, Heartbeat: 200 * time.Millisecond, Flush: 100 * time.Millisecond})
		watched <- err
	}()
	if _, err := run.Write([]byte("echo before-the-crash\n")); err != nil {
		t.Fatal(err)
	}
	prefix := recording.RefOf("test", b.s).Prefix()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		keys, _ := store.List(ctx, prefix)
		if len(keys) > 0 {
			if raw, err := store.Get(ctx, keys[len(keys)-1], ""); err == nil && bytes.Contains(raw, []byte("before-the-crash")) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing streamed to the store")
		}
	}
	die()
	if err := <-watched; !errors.Is(err, context.Canceled) {
		t.Fatalf("the relay's watcher: %v", err)
	}

	finalizer := &recording.SessionFinalizer{Store: store, Cluster: "test", Retention: time.Hour, URI: "file://" + store.Root + "/",
		Anchorer: &tlog.Anchorer{URL: log.URL, Signer: b.sv}}
	sweeperUser, err := b.c.Sweeper()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := sweeper.New(sweeperUser.Config, sweeper.Options{MetricsAddr: "0", HealthAddr: "0", HeartbeatTimeout: time.Second,
		Evidence: finalizer, Anchors: finalizer, AnchorAfter: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(sctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	got := &v1alpha1.Session{}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if err := b.c.Client.Get(ctx, client.ObjectKeyFromObject(b.s), got); err != nil {
			t.Fatal(err)
		}
		if ev := got.Status.Evidence; ev != nil && ev.EntryID != "" && !ev.AnchorPending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not swept and anchored within a minute: %+v", got.Status)
		}
	}
	if got.Status.End == nil || got.Status.End.Reason != v1alpha1.EndSwept || !got.Status.End.Abnormal {
		t.Fatalf("the end: %+v", got.Status.End)
	}
	dir := filepath.Join(store.Root, prefix)
	out, err := verifyCLI(dir, "--online", "--key", writePublicKey(t, b.sv), "--rekor-public-key", writeLogKey(t), "--session", exportSession(t, got))
	if err != nil || !strings.Contains(out, "the log holds the same entry") || !strings.Contains(out, "ok        session") {
		t.Fatalf("recording verify --online: %v\n%s", err, out)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, recording.ManifestFile))
	var m struct {
		EndedAbnormally bool `json:"endedAbnormally"`
	}
	if err != nil || json.Unmarshal(manifest, &m) != nil || !m.EndedAbnormally {
		t.Fatalf("the manifest does not say the session ended abnormally: %v\n%s", err, manifest)
	}
	_ = run.End(ctx, "test", v1alpha1.EndUser, "") // the stream this test kept open
}
