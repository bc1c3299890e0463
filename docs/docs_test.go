// Package docs_test holds the project's prose to its code: every file a
// document names exists, and every function, type or method the session
// walk in CONTRIBUTING.md names after a file is declared in that file. A
// rename that leaves the walk behind fails here, not in a newcomer's hands.
package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository, from this folder.
const root = ".."

// named is a backticked Go file (with its folder, or bare: then in the
// folder named last) and the backticked identifier that may follow it.
var named = regexp.MustCompile("`([A-Za-z0-9_./-]+\\.go)`(?:\\s+`([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)?)`)?")

// paths is a backticked path into the repository: a folder and a name,
// at least one slash, no spaces, wildcards or options.
var paths = regexp.MustCompile("`((?:api|charts|cmd|docs|evidence|hack|internal|lifecycle|manifests|notify|policies|relay|sweeper|test|tools|vap|webhook|backstage)/[A-Za-z0-9_./-]*)`")

var goName = regexp.MustCompile(`\.[A-Z][A-Za-z0-9]*$`)

func TestWalkNamesWhatTheCodeDeclares(t *testing.T) {
	doc := read(t, "CONTRIBUTING.md")
	dir, checked := "", 0
	for _, m := range named.FindAllStringSubmatch(doc, -1) {
		file := m[1]
		if strings.Contains(file, "/") {
			dir = path.Dir(file)
		} else {
			file = path.Join(dir, file)
		}
		decls, err := declared(filepath.Join(root, file))
		if err != nil {
			t.Errorf("CONTRIBUTING.md names %s: %v", file, err)
			continue
		}
		if m[2] != "" && !decls[m[2]] {
			t.Errorf("CONTRIBUTING.md names %s in %s, which declares no such thing", m[2], file)
		}
		checked++
	}
	// The walk is there to be checked: a change to its format that this
	// test no longer reads must not pass as a walk with nothing in it.
	if checked < 40 {
		t.Fatalf("read only %d files and names from CONTRIBUTING.md's walk", checked)
	}
}

func TestNamedPathsExist(t *testing.T) {
	outputs := ignoredFolders(t)
	for _, name := range []string{"README.md", "CONTRIBUTING.md", "docs/operators.md", "docs/policies.md", "docs/evidence.md", "docs/backstage.md"} {
		for _, m := range paths.FindAllStringSubmatch(read(t, name), -1) {
			p := strings.TrimSuffix(m[1], "/")
			// A wildcard, or a Go name (evidence/recording.S3), is no path.
			if strings.ContainsAny(p, "*{") || goName.MatchString(p) {
				continue
			}
			// What a build or a test writes (screenshots, bin/) is there
			// only once it ran: named, not committed.
			if slices.ContainsFunc(outputs, func(o string) bool { return strings.HasPrefix(p+"/", o) }) {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("%s names %s, which is not in the repository", name, p)
			}
		}
	}
}

// ignoredFolders is each folder the repository's .gitignore names from
// its root ("/test/browser/artifacts/"), as "test/browser/artifacts/".
func ignoredFolders(t *testing.T) []string {
	t.Helper()
	var folders []string
	for _, l := range strings.Split(read(t, ".gitignore"), "\n") {
		if strings.HasPrefix(l, "/") && strings.HasSuffix(l, "/") && !strings.ContainsAny(l, "*!") {
			folders = append(folders, strings.TrimPrefix(l, "/"))
		}
	}
	return folders
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// declared is every top-level name a Go file declares, with each method
// as Type.Method.
func declared(file string) (map[string]bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				name = receiver(d.Recv.List[0].Type) + "." + name
			}
			names[name] = true
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names[s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names[n.Name] = true
					}
				}
			}
		}
	}
	return names, nil
}

// receiver is the type a method is declared on, without its pointer or
// type parameters.
func receiver(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiver(e.X)
	case *ast.IndexExpr:
		return receiver(e.X)
	case *ast.IndexListExpr:
		return receiver(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}
