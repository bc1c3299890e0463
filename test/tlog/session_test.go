package tlog_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/recording"
	"github.com/tower-dev/breakglass/relay/session"
	"github.com/tower-dev/breakglass/relay/tlog"
	"github.com/tower-dev/breakglass/test/cluster"
)

// TestSessionAnchoredAfterRekorComesBack: a session ends while the log is
// down; the Session says "anchor pending", the end is not held up; once the
// log is back the bundle is beside the recording, the Session names the
// entry, and the recording verifies offline and online with the CLI's checks.
func TestSessionAnchoredAfterRekorComesBack(t *testing.T) {
	ctx := context.Background()
	debugImage := "registry.example/breakglass/debug@sha256:" + strings.Repeat("d", 64)
	c, err := cluster.Start(ctx, cluster.Options{Profile: policies.Flight, DebugImages: []string{debugImage}, VirtualNode: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	ns := c.Namespace(t, "anchored")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: cluster.NodeName, Containers: []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.2", Command: []string{"sleep", "3600"}}}}}
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	portal, err := c.Portal()
	if err != nil {
		t.Fatal(err)
	}
	s := &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Name: "s1", Namespace: ns},
		Spec: v1alpha1.SessionSpec{TargetPod: "web-1", Mode: v1alpha1.ModeLive, Duration: metav1.Duration{Duration: 30 * time.Minute}, Reason: "500s", Requester: "alice"}}
	if err := portal.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.Status = v1alpha1.SessionStatus{Phase: v1alpha1.PhaseApproved, Approval: &v1alpha1.Approval{By: "bob", At: metav1.Now(), Mode: v1alpha1.ModeLive}}
	if err := portal.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	store := &recording.Dir{Root: t.TempDir()}
	r := &session.Runner{Client: portal.Client, Kube: portal.Kube, Config: portal.Config, Store: store, Clock: clock.RealClock{},
		DebugImage: debugImage, Grace: 2 * time.Minute, MaxTTL: 75 * time.Minute, Retention: time.Hour,
		Anchorer: &tlog.Anchorer{URL: log.URL, Signer: sv, Backoff: 200 * time.Millisecond}}
	live, err := r.Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := live.Write([]byte("echo anchored\n")); err != nil {
		t.Fatal(err)
	}
	if err := log.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = live.End(ctx, "alice", v1alpha1.EndUser)
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

	dir := filepath.Join(store.Root, recording.Prefix(ns, "s1"))
	raw, err := os.ReadFile(filepath.Join(dir, tlog.BundleFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(ev.EntryID)) {
		t.Fatal("the bundle names another entry than the Session")
	}
	// The CLI's check, offline and online.
	out, err := verifyCLI(dir, "--online")
	if err != nil || !strings.Contains(out, "the log holds the same entry") {
		t.Fatalf("recording verify --online: %v\n%s", err, out)
	}
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
	if out, err := verifyCLI(dir); err == nil {
		t.Fatalf("a flipped byte in the manifest verified:\n%s", out)
	}
}
