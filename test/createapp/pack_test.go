package createapp_test

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pack returns each package's tarball by name: each workspace package
// packed by npm pack in its own folder, as a release would, holding every
// file its package.json points to (npm pack, unlike Yarn, does not apply
// publishConfig itself: each package's prepack does, backstage-cli's).
func pack(t *testing.T, r *run, work string) map[string]string {
	t.Helper()
	tarballs := packInto(t, r, filepath.Join(work, "published"), func(p string) string { return filepath.Join(root, "backstage", p) })
	for _, p := range packages {
		for _, problem := range tarballProblems(t, tarballs[p.name]) {
			t.Errorf("npm pack of backstage/%s: %s", p.dir, problem)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return tarballs
}

// packInto packs each package from the folder dir gives into its own
// folder under dest, and returns each tarball by name.
func packInto(t *testing.T, r *run, dest string, dir func(string) string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, p := range packages {
		out := filepath.Join(dest, path.Base(p.dir))
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		r.do("npm pack "+path.Base(p.dir), dir(p.dir), "npm", "pack", "--pack-destination", out)
		found, _ := filepath.Glob(filepath.Join(out, "*.tgz"))
		if len(found) != 1 {
			t.Fatalf("npm pack of %s left %v", p.dir, found)
		}
		got[p.name] = found[0]
	}
	return got
}

// tarballProblems says which of the files a packed package.json points to
// (main, module, types, browser, exports, configSchema) the tarball lacks.
func tarballProblems(t *testing.T, tgz string) []string {
	t.Helper()
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	var manifest map[string]any
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(h.Name, "package/")
		files[name] = true
		if name == "package.json" {
			if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
				t.Fatalf("%s: package.json: %v", tgz, err)
			}
		}
	}
	var problems []string
	check := func(field string, v any) {
		s, ok := v.(string)
		if !ok {
			return
		}
		switch p := path.Clean(strings.TrimPrefix(s, "./")); {
		case !files[p]:
			problems = append(problems, fmt.Sprintf("package.json's %s is %s, which the tarball does not hold", field, s))
		case field != "configSchema" && !strings.HasSuffix(p, ".d.ts") && regexp.MustCompile(`\.(ts|tsx|mts|cts)$`).MatchString(p):
			// npm always packs main, so src/index.ts is there, but not
			// what it imports, and an app does not compile its
			// dependencies' TypeScript.
			problems = append(problems, fmt.Sprintf("package.json's %s is %s, TypeScript source, not the built dist/", field, s))
		}
	}
	for _, field := range []string{"main", "module", "types", "browser", "configSchema"} {
		check(field, manifest[field])
	}
	var walk func(string, any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case string:
			check(at, v)
		case map[string]any:
			for k, w := range v {
				walk(at+"["+k+"]", w)
			}
		}
	}
	walk("exports", manifest["exports"])
	if manifest == nil {
		problems = append(problems, "no package.json")
	}
	return problems
}
