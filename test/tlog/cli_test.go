package tlog_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
)

// verifyCLI runs `kubectl-breakglass recording verify DIR ARGS` from source.
func verifyCLI(dir string, args ...string) (string, error) {
	return cli(append([]string{"recording", "verify", dir}, args...)...)
}

// cli runs `kubectl-breakglass ARGS` from source.
func cli(args ...string) (string, error) {
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	cmd := exec.Command("go", append([]string{"run", "./cmd/kubectl-breakglass"}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// writeLogKey writes the log's public key as its operator publishes it.
func writeLogKey(t testing.TB) string {
	t.Helper()
	key, err := log.PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tempFile(t, "rekor.pub", key)
}

// tempFile writes data to a file of that name in a folder of the test's.
func tempFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// exportSession writes s as `kubectl get session -o yaml` does.
func exportSession(t testing.TB, s *v1alpha1.Session) string {
	t.Helper()
	s = s.DeepCopy()
	s.APIVersion, s.Kind = v1alpha1.GroupVersion.String(), "Session"
	raw, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return tempFile(t, "session.yaml", raw)
}

// forgeAnchor copies the recording in dir and anchors its manifest anew in
// the same log, signed by a forger's own key, as someone who wants a
// recording to pass as the relay's would.
func forgeAnchor(t testing.TB, dir string) string {
	t.Helper()
	forged := t.TempDir()
	for _, name := range []string{recording.CastFile, recording.TranscriptFile, recording.ManifestFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(forged, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	manifest, err := os.ReadFile(filepath.Join(forged, recording.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := anchorer(t).Anchor(context.Background(), manifest)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(forged, tlog.BundleFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	sigstore, err := b.Sigstore(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(forged, tlog.SigstoreBundleFile), sigstore, 0o600); err != nil {
		t.Fatal(err)
	}
	return forged
}
