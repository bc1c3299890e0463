// Command krew writes the krew plugin manifest for the archives make krew
// built: one platform per archive, named kubectl-breakglass_OS_ARCH.tar.gz,
// each with its SHA-256.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	version := flag.String("version", "", "the release, semver with a v (v0.3.0)")
	baseURL := flag.String("base-url", "https://github.com/tower-dev/breakglass/releases/download", "where the release's archives are published (VERSION/ARCHIVE under it)")
	out := flag.String("o", "", "the manifest's file (default: standard output)")
	flag.Parse()
	b, err := manifest(*version, *baseURL, flag.Args())
	if err == nil && *out != "" {
		err = os.WriteFile(*out, b, 0o644)
	} else if err == nil {
		_, err = os.Stdout.Write(b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
}

var (
	archiveName = regexp.MustCompile(`^kubectl-breakglass_(linux|darwin|windows)_(amd64|arm64)\.tar\.gz$`)
	// semver as krew requires it: a v, three numbers, an optional pre-release.
	semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)
)

type selector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type file struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type platform struct {
	Selector selector `json:"selector"`
	URI      string   `json:"uri"`
	SHA256   string   `json:"sha256"`
	Bin      string   `json:"bin"`
	Files    []file   `json:"files"`
}

func manifest(version, baseURL string, archives []string) ([]byte, error) {
	if !semver.MatchString(version) {
		return nil, fmt.Errorf("--version %q: krew needs semver with a v, such as v0.3.0", version)
	}
	if len(archives) == 0 {
		return nil, errors.New("no archives: make krew builds them into bin/krew")
	}
	var platforms []platform
	for _, a := range archives {
		m := archiveName.FindStringSubmatch(filepath.Base(a))
		if m == nil {
			return nil, fmt.Errorf("%s: not a kubectl-breakglass_OS_ARCH.tar.gz archive", a)
		}
		sum, err := sha256File(a)
		if err != nil {
			return nil, err
		}
		bin := "kubectl-breakglass"
		if m[1] == "windows" {
			bin += ".exe"
		}
		platforms = append(platforms, platform{
			Selector: selector{MatchLabels: map[string]string{"os": m[1], "arch": m[2]}},
			URI:      baseURL + "/" + version + "/" + filepath.Base(a), SHA256: sum, Bin: bin,
			Files: []file{{From: bin, To: "."}},
		})
	}
	slices.SortFunc(platforms, func(a, b platform) int { return strings.Compare(a.URI, b.URI) })
	return yaml.Marshal(map[string]any{
		"apiVersion": "krew.googlecontainertools.github.com/v1alpha2",
		"kind":       "Plugin",
		"metadata":   map[string]string{"name": "breakglass"},
		"spec": map[string]any{
			"version":          version,
			"homepage":         "https://github.com/tower-dev/breakglass",
			"shortDescription": "Approved, recorded debug sessions on a pod, without exec",
			"description": "Request a debug session on a pod with a reason; another person approves it; the relay\n" +
				"adds a signed, non-root, read-only debug container under a short-lived grant and relays a\n" +
				"recorded terminal. Also renders and tests the admission policies offline and verifies\n" +
				"recordings and the audit log.\n",
			"platforms": platforms,
		},
	})
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
