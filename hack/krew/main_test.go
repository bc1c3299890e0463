package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestManifest: one platform per archive, with its own SHA-256, the .exe on
// Windows, and the release's URI; a version krew would refuse and an archive
// of another name are refused here.
func TestManifest(t *testing.T) {
	dir := t.TempDir()
	sums := map[string]string{}
	var archives []string
	for _, name := range []string{"kubectl-breakglass_windows_amd64.tar.gz", "kubectl-breakglass_linux_arm64.tar.gz"} {
		body := []byte("archive " + name)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		sums[name] = hex.EncodeToString(sum[:])
		archives = append(archives, p)
	}
	b, err := manifest("v0.3.0", "https://example.com/dl", archives)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Kind string
		Spec struct {
			Version   string
			Platforms []platform
		}
	}
	if err := yaml.Unmarshal(b, &m); err != nil || m.Kind != "Plugin" || m.Spec.Version != "v0.3.0" || len(m.Spec.Platforms) != 2 {
		t.Fatalf("the manifest: %v\n%s", err, b)
	}
	for _, p := range m.Spec.Platforms {
		name := filepath.Base(p.URI)
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		if p.SHA256 != sums[name] || p.URI != "https://example.com/dl/v0.3.0/"+name || name != "kubectl-breakglass_"+os+"_"+arch+".tar.gz" {
			t.Errorf("platform %+v", p)
		}
		if (os == "windows") != strings.HasSuffix(p.Bin, ".exe") || p.Files[0].From != p.Bin {
			t.Errorf("the binary of %s: %+v", os, p)
		}
	}
	for version, archives := range map[string][]string{"0.3.0": archives, "v0.3": archives, "v0.3.0": {filepath.Join(dir, "breakglass.zip")}, "v0.3.1": nil} {
		if _, err := manifest(version, "https://example.com/dl", archives); err == nil {
			t.Errorf("version %s with %v was accepted", version, archives)
		}
	}
}
