package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/evidence/recording"
)

func TestRecordingVerify(t *testing.T) {
	root := t.TempDir()
	store := &recording.Dir{Root: root}
	ctx := context.Background()
	rec, err := recording.New(ctx, store, "s1/", recording.Options{RetainUntil: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Output(ctx, []byte("uid=65532 gid=65532\r\n\xff")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rec.Close(ctx, "shop/s1"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "s1")
	out, err := runCLI("recording", "verify", dir)
	if err != nil || strings.Count(out, "ok ") != 2 || !strings.Contains(out, "manifest  sha256:") {
		t.Fatalf("%v\n%s", err, out)
	}
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
			out, err := runCLI("recording", "verify", copyDir)
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
	rec, err := recording.New(ctx, store, "s1/", recording.Options{RetainUntil: time.Now().Add(time.Hour)})
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
	if _, _, err := rec.Close(ctx, "shop/s1"); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI("recording", "play", "--speed", "1000", filepath.Join(root, "s1", recording.CastFile))
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
