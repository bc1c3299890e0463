package vap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCaseFileRefusesMalformed(t *testing.T) {
	const ok = `
cases:
- name: c
  operation: CREATE
  resource: pods
  user: {name: alice}
  object: {apiVersion: v1, kind: Pod}
  expect: allow
`
	if _, err := ParseCaseFile([]byte(ok)); err != nil {
		t.Fatalf("the good file: %v", err)
	}
	for _, tc := range []struct {
		name, file, want string
	}{
		{"not YAML", "cases: [", "not YAML"},
		{"no cases", "profiles: [ground]", "cases: the file has no cases"},
		{"unknown field", strings.Replace(ok, "expect: allow", "expect: allow\n  expected: deny", 1), `unknown field "expected"`},
		{"bad expect", strings.Replace(ok, "expect: allow", "expect: maybe", 1), `cases[0] (c).expect: "maybe" must be allow or deny`},
		{"bad operation", strings.Replace(ok, "CREATE", "PATCH", 1), `cases[0] (c).operation: "PATCH" must be CREATE, UPDATE, DELETE or CONNECT`},
		{"bad profile", "profiles: [space]\n" + ok, `profiles: "space" is not ground or flight`},
		{"no user", strings.Replace(ok, "user: {name: alice}", "user: {}", 1), "cases[0] (c).user.name: required"},
		{"no resource", strings.Replace(ok, "resource: pods", "", 1), "cases[0] (c).resource: required"},
		{"deep resource", strings.Replace(ok, "resource: pods", "resource: pods/a/b", 1), "is not resource or resource/subresource"},
		{"object without kind", strings.Replace(ok, "kind: Pod", "", 1), "cases[0] (c).object.kind: required"},
		{"message on an allow", strings.Replace(ok, "expect: allow", "expect: allow\n  message: x", 1), "only a denial has a message"},
		{"wrong type", strings.Replace(ok, "user: {name: alice}", "user: alice", 1), "not a case file"},
		{"no name", strings.Replace(ok, "name: c", "name: \"\"", 1), "cases[0].name: required"},
		{"a name twice", ok + strings.TrimPrefix(strings.TrimPrefix(ok, "\n"), "cases:\n"), "used twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCaseFile([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseCaseFile = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestLoadCaseFileNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(path, []byte("cases:\n- name: x\n  expect: sure\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadCaseDir(dir)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("LoadCaseDir = %v, want the file named", err)
	}
	if _, err := LoadCaseDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no case files") {
		t.Fatalf("an empty folder: %v", err)
	}
}

func TestParamsOverrideRefusesUnknownField(t *testing.T) {
	if _, err := paramsFor(map[string]any{"debugImagez": []any{}}); err == nil || !strings.Contains(err.Error(), `unknown field "debugImagez"`) {
		t.Fatalf("paramsFor = %v", err)
	}
	if _, err := paramsFor(map[string]any{"debugImages": []any{"registry.example/debug:latest"}}); err == nil ||
		!strings.Contains(err.Error(), "params.debugImages[0]") || !strings.Contains(err.Error(), "pinned by digest") {
		t.Fatalf("a tag in the allowlist: %v", err)
	}
	if _, err := paramsFor(map[string]any{"grantTTL": map[string]any{"min": "75m", "max": "15m"}}); err == nil ||
		!strings.Contains(err.Error(), "params.grantTTL.max") {
		t.Fatalf("bounds the wrong way round: %v", err)
	}
}
