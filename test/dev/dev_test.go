// Package dev_test runs `make dev`'s plane in-process (with Rekor) and walks
// the README's two-person session through it, then stops it and checks that
// nothing is left behind.
package dev_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/localplane"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/client"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

// TestDevWalkthrough: make dev, with Rekor, on the virtual node.
func TestDevWalkthrough(t *testing.T) {
	prereq.Need(t, append(append(prereq.ControlPlane, prereq.Console), prereq.Rekor...)...)
	walkthrough(t, localplane.Options{Profile: policies.Flight, Rekor: true})
}

// TestDevRealNode: make dev DEV_FLAGS=--real-node, the signed debug image
// really run by containerd and runc.
func TestDevRealNode(t *testing.T) {
	prereq.Need(t, append(append(prereq.ControlPlane, prereq.Console), prereq.RealNode...)...)
	walkthrough(t, localplane.Options{Profile: policies.Flight, RealNode: true})
}

func walkthrough(t *testing.T, o localplane.Options) {
	o.Moderated = []string{"shop"}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var logs cluster.SyncBuffer
	o.RelayAddr, o.Dir = "127.0.0.1:0", state
	running := up(ctx, t, o, &logs)
	info := running.Info

	as := func(who string) *client.Client {
		tok, err := os.ReadFile(info.Tokens[who])
		if err != nil {
			t.Fatal(err)
		}
		return &client.Client{BaseURL: info.RelayURL, Token: strings.TrimSpace(string(tok))}
	}
	alice, bob := as(localplane.Alice.Email), as(localplane.Bob.Email)
	target := client.Target{Cluster: info.Cluster, Namespace: info.Namespace}
	s, err := alice.Request(ctx, target, wire.Request{Pod: info.Pod, Mode: v1alpha1.ModeLive, Duration: "20m", Reason: "trying the demo"})
	if err != nil {
		t.Fatal(err)
	}
	target.Name = s.Name
	if _, err := bob.Approve(ctx, target, wire.Decision{}); err != nil {
		t.Fatal(err)
	}
	// The start adds the signed debug image: the webhook verifies it.
	if _, err := alice.Start(ctx, target); err != nil {
		t.Fatal(err)
	}
	in, typed := io.Pipe()
	var screen, notes, watched cluster.SyncBuffer
	attached := make(chan error, 1)
	go func() { attached <- alice.Attach(ctx, target, in, &screen, &notes, nil) }()
	// shop is moderated: alone, what alice types is held, never run.
	notes.WaitFor(t, 30*time.Second, "nobody is watching yet")
	typeLine := func(line string) {
		if _, err := typed.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	typeLine("echo alone-$((40+1))")
	notes.WaitFor(t, 30*time.Second, "no moderator is watching")
	// bob watches with nothing to type: his input stays open, never written.
	quiet, hush := io.Pipe()
	defer hush.Close()
	go func() { _ = bob.Attach(ctx, target, quiet, &watched, io.Discard, nil) }()
	notes.WaitFor(t, 30*time.Second, "bob@example.com is watching")
	typeLine("echo demo-$((40+2)) as $(id -u)")
	screen.WaitFor(t, 30*time.Second, "demo-42 as 65532")
	watched.WaitFor(t, 30*time.Second, "demo-42 as 65532")
	if strings.Contains(screen.String(), "alone-41") {
		t.Fatalf("what alice typed alone ran: %q", screen.String())
	}
	// More time: asked by alice, given by bob; the terminal goes on.
	before, err := alice.Get(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Extend(ctx, target, wire.ExtensionAsk{Duration: "15m", Reason: "one more look"}); err != nil {
		t.Fatal(err)
	}
	extended, err := bob.ApproveExtension(ctx, target, "")
	if err != nil {
		t.Fatal(err)
	}
	if moved := extended.Status.Deadline.Sub(before.Status.Deadline.Time); moved != 15*time.Minute || extended.Status.Grant.RoleBinding == before.Status.Grant.RoleBinding {
		t.Fatalf("the hard stop moved by %s, the grant %s -> %s", moved, before.Status.Grant.RoleBinding, extended.Status.Grant.RoleBinding)
	}
	typeLine("echo extended-$((40+3))")
	screen.WaitFor(t, 30*time.Second, "extended-43")
	ended, err := alice.End(ctx, target, "")
	if err != nil || ended.Status.Evidence == nil {
		t.Fatalf("end: %v %+v", err, ended.Status)
	}
	var closed *client.Ended
	if err := <-attached; !errors.As(err, &closed) || closed.Code != 1000 {
		t.Fatalf("the terminal: %v", err)
	}
	// What was typed, as bob reviews it: what ran, never what was held.
	cmds, err := bob.Commands(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range cmds {
		lines = append(lines, c.Line)
	}
	if want := []string{"echo demo-$((40+2)) as $(id -u)", "echo extended-$((40+3))"}; !slices.Equal(lines, want) {
		t.Fatalf("what was typed: %q, want %q", lines, want)
	}
	if o.Rekor {
		requireAnchored(ctx, t, bob, target, info)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- running.Stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("stopping: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("did not stop within a minute")
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Fatalf("the state folder is left behind: %v", err)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(info.RelayURL, "http://"), time.Second); err == nil {
		_ = c.Close()
		t.Fatal("the relay still listens")
	}
}

// up brings the plane up for the test, saying how long each step took.
func up(ctx context.Context, t *testing.T, o localplane.Options, logs *cluster.SyncBuffer) *localplane.Running {
	t.Helper()
	r, err := localplane.Background(ctx, o, logs)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	// Stopped also when the test fails: the real node's changes to the
	// machine are undone.
	t.Cleanup(func() { _ = r.Stop() })
	t.Log(r.Report())
	return r
}

// requireAnchored: with --rekor, the recording is anchored a moment after
// the end, and the key a reviewer pins is published.
func requireAnchored(ctx context.Context, t *testing.T, bob *client.Client, target client.Target, info localplane.Info) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got, err := bob.Get(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		if ev := got.Status.Evidence; ev != nil && ev.EntryID != "" && !ev.AnchorPending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not anchored in %s within 30s: %+v", info.RekorURL, got.Status.Evidence)
		}
	}

	// The key a reviewer pins is published: beside the recordings, and by the relay.
	published, err := os.ReadFile(info.RelayKey)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(info.RelayURL + "/api/v1/signing-key")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(published), "PUBLIC KEY") || string(served) != string(published) {
		t.Fatalf("the relay serves %d %q, make dev wrote %q", resp.StatusCode, served, published)
	}
}
