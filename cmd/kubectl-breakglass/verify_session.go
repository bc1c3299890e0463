package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
)

// readExportedSession reads a Session as kubectl exports it (YAML or JSON),
// refusing a file that is not one.
func readExportedSession(file string) (*v1alpha1.Session, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--session: %w", err)
	}
	var s v1alpha1.Session
	if err := yaml.UnmarshalStrict(raw, &s); err != nil {
		return nil, fmt.Errorf("--session: %s is not a Session: %w", file, err)
	}
	if s.Kind != "Session" || s.Name == "" || s.Namespace == "" || s.UID == "" {
		return nil, fmt.Errorf("--session: %s is not an exported Session (kind Session with a name, namespace and UID)", file)
	}
	return &s, nil
}

// checkAgainstSession checks that the manifest (body, its SHA-256 hex sum)
// is the recording of the exported Session s: the SHA-256 the Session
// records, and the cluster, namespace, name and UID the manifest names. It
// prints what it checked, and returns the log entry the Session names (""
// while its anchor is pending).
func checkAgainstSession(w io.Writer, body []byte, sum string, s *v1alpha1.Session, cluster string) (string, error) {
	ev := s.Status.Evidence
	if ev == nil || ev.ManifestSHA256 == "" {
		return "", fmt.Errorf("the Session %s/%s records no recording", s.Namespace, s.Name)
	}
	switch {
	case cluster == "" && ev.Cluster == "":
		return "", fmt.Errorf("the Session %s/%s does not record its cluster: pass --cluster", s.Namespace, s.Name)
	case cluster == "":
		cluster = ev.Cluster
	case ev.Cluster != "" && ev.Cluster != cluster:
		return "", fmt.Errorf("the Session's evidence was recorded on cluster %q, not %q", ev.Cluster, cluster)
	}
	if !strings.EqualFold(ev.ManifestSHA256, sum) {
		return "", fmt.Errorf("the Session records manifest SHA-256 %s, this one is %s", ev.ManifestSHA256, sum)
	}
	m, err := recording.ParseManifest(body)
	if err != nil {
		return "", err
	}
	ref := recording.RefOf(cluster, s)
	if err := m.Names(ref); err != nil {
		return "", err
	}
	fmt.Fprintf(w, "ok        session            %s: the manifest's SHA-256, cluster, namespace, name and UID are the Session's\n", ref)
	return ev.EntryID, nil
}

// manifestIn is the manifest to check in dir: manifest.json, unless the
// Session names another hash and the manifest kept under that hash's name
// (recording.AltName: someone planted other bytes under the usual name
// first) is there.
func manifestIn(dir string, s *v1alpha1.Session) string {
	if s == nil || s.Status.Evidence == nil || s.Status.Evidence.ManifestSHA256 == "" {
		return recording.ManifestFile
	}
	want := s.Status.Evidence.ManifestSHA256
	if body, err := os.ReadFile(filepath.Join(dir, recording.ManifestFile)); err == nil {
		if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) == want {
			return recording.ManifestFile
		}
	}
	alt := recording.AltName(recording.ManifestFile, want)
	if _, err := os.Stat(filepath.Join(dir, alt)); err == nil {
		return alt
	}
	return recording.ManifestFile
}
