package recording

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// FileCheck is the result for one file of a recording.
type FileCheck struct {
	Name     string
	Want     string
	Got      string
	Problem  string
	Verified bool
}

// VerifyDir checks the files of a recording in dir against its manifest:
// each file's size and SHA-256, and that the transcript decodes. It returns
// the manifest's own SHA-256 (what the transparency log holds), one result
// per file, and an error naming the first file that does not match.
func VerifyDir(dir string) (string, []FileCheck, error) {
	return VerifyManifest(dir, ManifestFile)
}

// VerifyManifest is VerifyDir with the manifest under another name (its
// AltName, when other bytes took the usual one).
func VerifyManifest(dir, manifestFile string) (string, []FileCheck, error) {
	body, err := os.ReadFile(filepath.Join(dir, manifestFile))
	if err != nil {
		return "", nil, fmt.Errorf("reading the manifest: %w", err)
	}
	m, err := ParseManifest(body)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(body)
	names := make([]string, 0, len(m.Files))
	for n := range m.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	var checks []FileCheck
	var first error
	for _, name := range names {
		want := m.Files[name]
		c := FileCheck{Name: name, Want: want.SHA256}
		file := name
		if want.Stored != "" {
			file = want.Stored
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.Base(file)))
		switch {
		case err != nil:
			c.Problem = err.Error()
		default:
			got := sha256.Sum256(data)
			c.Got = hex.EncodeToString(got[:])
			switch {
			case c.Got != want.SHA256 || len(data) != want.Size:
				c.Problem = fmt.Sprintf("SHA-256 %s (%d bytes), the manifest says %s (%d bytes)", c.Got, len(data), want.SHA256, want.Size)
			case name == TranscriptFile:
				if _, err := ReadTranscript(data); err != nil {
					c.Problem = "the transcript does not decode: " + err.Error()
				}
			}
		}
		c.Verified = c.Problem == ""
		if !c.Verified && first == nil {
			first = fmt.Errorf("%s does not match the manifest: %s", name, c.Problem)
		}
		checks = append(checks, c)
	}
	return hex.EncodeToString(sum[:]), checks, first
}

// ParseManifest reads a manifest, refusing one that names no files.
func ParseManifest(body []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return Manifest{}, fmt.Errorf("%s: not a manifest: %w", ManifestFile, err)
	}
	if len(m.Files) == 0 {
		return Manifest{}, fmt.Errorf("%s: names no files", ManifestFile)
	}
	return m, nil
}
