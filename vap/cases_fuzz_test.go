package vap_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/vap"
)

// FuzzCaseFile: any file handed to `kubectl breakglass policy test` is
// refused with the field that is wrong, or parsed into well-formed cases
// that the offline evaluator runs (every case judged, never a panic).
func FuzzCaseFile(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "policies", "testdata", "*.yaml"))
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("cases: []\n"))
	f.Add([]byte("base: &b {name: x}\ncases:\n- <<: *b\n  resource: pods\n  user: {name: u}\n  expect: allow\n  operation: CREATE\n  object: {apiVersion: v1, kind: Pod}\n"))
	f.Add([]byte("cases:\n- {name: a, resource: pods/exec/x, user: {name: u}, expect: allow, operation: CONNECT, object: {apiVersion: v1, kind: PodExecOptions}}\n"))
	runner, err := vap.NewRunner()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cf, err := vap.ParseCaseFile(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a refusal without a reason")
			}
			return
		}
		seen := map[string]bool{}
		for _, c := range cf.Cases {
			if c.Name == "" || seen[c.Name] || (c.Expect != "allow" && c.Expect != "deny") || c.Resource == "" {
				t.Fatalf("a malformed case was accepted: %+v", c)
			}
			seen[c.Name] = true
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if results, err := runner.Run(ctx, cf); err == nil && len(results) == 0 {
			t.Fatal("cases ran to no result")
		}
	})
}
