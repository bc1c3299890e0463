package tlog_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/localplane/tools"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
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
// and the log's key they pinned, and the log they trust.
func stockTools(t testing.TB, dir string, s *v1alpha1.Session, relayPub string) (string, error) {
	t.Helper()
	work := t.TempDir()
	for _, name := range []string{recording.CastFile, recording.TranscriptFile, recording.ManifestFile, tlog.SigstoreBundleFile} {
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
	logKey, err := log.PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"session.json": session, "relay.pub": key, "rekor.pub": logKey} {
		if err := os.WriteFile(filepath.Join(work, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", stockToolsBlock(t))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+tools.BinDir()+":"+os.Getenv("PATH"), "REKOR_URL="+log.URL, "HOME="+work)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// trustedLog is the log a reviewer trusts: its URL, key (PEM) and, for
// Rekor v2, its checkpoints' origin.
type trustedLog struct {
	url    string
	key    []byte
	origin string
}

// v1Log is the suite's Rekor v1.
func v1Log(t testing.TB) trustedLog {
	t.Helper()
	key, err := log.PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return trustedLog{url: log.URL, key: key}
}

// cosignVerifyBlob runs the stock `cosign verify-blob` on manifest and its
// Sigstore bundle, offline, against a trusted root that cosign itself makes
// (`cosign trusted-root create`) of the log and, when caPEM is given, the
// relay's certificate authority; args pin the key or the identity.
func cosignVerifyBlob(t testing.TB, tl trustedLog, manifest, sigstoreBundle, caPEM []byte, args ...string) (string, error) {
	t.Helper()
	cosign := filepath.Join(tools.BinDir(), "cosign")
	work := t.TempDir()
	files := map[string][]byte{"manifest.json": manifest, tlog.SigstoreBundleFile: sigstoreBundle, "rekor.pub": tl.key}
	spec := "url=" + tl.url + ",public-key=rekor.pub,start-time=2020-01-01T00:00:00Z"
	if tl.origin != "" {
		spec += ",origin=" + tl.origin
	}
	create := []string{"trusted-root", "create", "--rekor", spec, "--out", "trusted-root.json"}
	if caPEM != nil {
		files["ca.pem"] = caPEM
		create = append(create, "--fulcio", "url=https://fulcio.invalid,certificate-chain=ca.pem")
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(work, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(cosign, args...)
		cmd.Dir, cmd.Env = work, append(os.Environ(), "HOME="+work)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(create...); err != nil {
		t.Fatalf("cosign trusted-root create: %v\n%s", err, out)
	}
	return run(append(append([]string{"verify-blob", "--bundle", tlog.SigstoreBundleFile, "--trusted-root", "trusted-root.json"}, args...), "manifest.json")...)
}
