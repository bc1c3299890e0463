package tlog_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
	"github.com/tower-dev/breakglass/test/cluster"
)

// stockToolsBlock is the shell block of docs/evidence.md that checks a
// recording with stock tools: the test runs the docs as written.
func stockToolsBlock(t testing.TB) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "docs", "evidence.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- stock-tools:begin -->")
	block, _, ok2 := strings.Cut(rest, "<!-- stock-tools:end -->")
	if !ok || !ok2 {
		t.Fatal("docs/evidence.md has no stock-tools block")
	}
	block = strings.TrimSpace(block)
	block = strings.TrimPrefix(block, "```sh")
	return strings.TrimSuffix(block, "```")
}

// stockTools runs that block as a reviewer would: in a copy of the
// recording's folder, with the Session exported as JSON, the relay's key
// they pinned, and the log they trust.
func stockTools(t testing.TB, dir string, s *v1alpha1.Session, relayPub string) (string, error) {
	t.Helper()
	rekorCLI := filepath.Join(cluster.AssetsDir(), "rekor-cli")
	if _, err := os.Stat(rekorCLI); err != nil {
		t.Fatalf("rekor-cli not found: run `make rekor` (it builds it from module sources): %v", err)
	}
	work := t.TempDir()
	for _, name := range []string{recording.CastFile, recording.TranscriptFile, recording.ManifestFile, tlog.BundleFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	session, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(relayPub)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"session.json": session, "relay.pub": key} {
		if err := os.WriteFile(filepath.Join(work, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", stockToolsBlock(t))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+cluster.AssetsDir()+":"+os.Getenv("PATH"), "REKOR_URL="+log.URL, "HOME="+work)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
