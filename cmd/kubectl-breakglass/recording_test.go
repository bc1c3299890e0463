package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
)

var testRef = recording.Ref{Cluster: "prod", Namespace: "shop", Name: "s1", UID: "5e55-10n"}

func TestRecordingVerify(t *testing.T) {
	root := t.TempDir()
	store := &recording.Dir{Root: root}
	ctx := context.Background()
	rec, err := recording.New(ctx, store, testRef, recording.Options{RetainUntil: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Output(ctx, []byte("uid=65532 gid=65532\r\n\xff")); err != nil {
		t.Fatal(err)
	}
	done, err := rec.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, testRef.Prefix())
	if _, err := runCLI("recording", "verify", dir); err == nil || !strings.Contains(err.Error(), "pin the signer") {
		t.Fatalf("no signer pinned: %v", err)
	}
	if _, err := runCLI("recording", "verify", "--key", "relay.pub", dir); err == nil {
		t.Fatal("a key that cannot be read was accepted")
	}
	out, err := runCLI("recording", "verify", "--integrity-only", dir)
	if err != nil || strings.Count(out, "ok ") != 2 || !strings.Contains(out, "manifest  sha256:") || !strings.Contains(out, "INTEGRITY ONLY") {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Run("against its Session", func(t *testing.T) {
		ev := recording.EvidenceOf(testRef, done, "", false)
		session := func(name, uid, cluster, sum string) string {
			s := &v1alpha1.Session{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Session"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID(uid)}}
			s.Status.Evidence = ev.DeepCopy()
			s.Status.Evidence.Cluster, s.Status.Evidence.ManifestSHA256 = cluster, sum
			raw, err := yaml.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "session.yaml")
			if err := os.WriteFile(p, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		out, err := runCLI("recording", "verify", "--integrity-only", "--session", session("s1", testRef.UID, "prod", ev.ManifestSHA256), dir)
		if err != nil || !strings.Contains(out, "ok        session            prod/shop/s1") {
			t.Fatalf("the genuine Session: %v\n%s", err, out)
		}
		for what, c := range map[string]struct{ file, want string }{
			"a re-created Session":  {session("s1", "another-uid", "prod", ev.ManifestSHA256), "is the recording of prod/shop/s1 (UID 5e55-10n)"},
			"another cluster's":     {session("s1", testRef.UID, "staging", ev.ManifestSHA256), "not of staging/shop/s1"},
			"another name":          {session("s2", testRef.UID, "prod", ev.ManifestSHA256), "not of prod/shop/s2"},
			"another manifest hash": {session("s1", testRef.UID, "prod", strings.Repeat("a", 64)), "the Session records manifest SHA-256 aaaa"},
		} {
			if _, err := runCLI("recording", "verify", "--integrity-only", "--session", c.file, dir); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want %q", what, err, c.want)
			}
		}
		if _, err := runCLI("recording", "verify", "--integrity-only", "--session", "recording_test.go", dir); err == nil || !strings.Contains(err.Error(), "is not a Session") {
			t.Errorf("a file that is not a Session: %v", err)
		}
	})
	for _, name := range []string{recording.CastFile, recording.TranscriptFile} {
		t.Run("a flipped byte in "+name, func(t *testing.T) {
			copyDir := t.TempDir()
			for _, f := range []string{recording.CastFile, recording.TranscriptFile, recording.ManifestFile} {
				data, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if f == name {
					data[len(data)/2] ^= 0x01
				}
				if err := os.WriteFile(filepath.Join(copyDir, f), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out, err := runCLI("recording", "verify", "--integrity-only", copyDir)
			if err == nil || !strings.Contains(err.Error(), name+" does not match the manifest") || !strings.Contains(out, "MISMATCH  "+name) {
				t.Fatalf("err %v\n%s", err, out)
			}
		})
	}
}

func TestRecordingPlay(t *testing.T) {
	root := t.TempDir()
	store := &recording.Dir{Root: root}
	ctx := context.Background()
	rec, err := recording.New(ctx, store, testRef, recording.Options{RetainUntil: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []string{"$ ", "id -u", "\r\n65532\r\n"} {
		if err := rec.Output(ctx, []byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Input(ctx, []byte("typed")); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI("recording", "play", "--speed", "1000", filepath.Join(root, testRef.Prefix(), recording.CastFile))
	if err != nil || out != "$ id -u\r\n65532\r\n" {
		t.Fatalf("play = %q, %v", out, err)
	}
	bad := filepath.Join(t.TempDir(), "bad.cast")
	if err := os.WriteFile(bad, []byte("{\"version\":2}\n[1, \"o\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI("recording", "play", bad); err == nil || !strings.Contains(err.Error(), "line 2: not an asciicast event") {
		t.Fatalf("a malformed cast: %v", err)
	}
}
