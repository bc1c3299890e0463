package policies_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/vap"
)

// TestCases runs the shipped case files through the API server's own CEL
// evaluator, in both profiles, and holds every policy to at least one case
// it allows and one it denies in each profile it is installed in.
func TestCases(t *testing.T) {
	runner, err := vap.NewRunner()
	if err != nil {
		t.Fatal(err)
	}
	files, err := vap.LoadCaseDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		policy  string
		profile policies.Profile
		expect  string
	}
	covered := map[key]bool{}
	named := map[string]bool{} // the rules some deny case expects by name
	for _, cf := range files {
		for _, c := range cf.Cases {
			if c.Expect == "deny" {
				named[c.Message] = true
			}
		}
		results, err := runner.Run(context.Background(), cf)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			if !r.Pass {
				t.Errorf("%s: %s (%s): want %s, got %s: %s", r.File, r.Case, r.Profile, r.Expect, r.Got, r.Detail)
			}
			for _, m := range r.Matched {
				covered[key{m, r.Profile, r.Expect}] = true
			}
		}
	}
	for _, p := range policies.All() {
		for _, v := range p.Validations {
			if !anyNames(named, "["+v.Name+"]") {
				t.Errorf("rule %s of %s: no denied case expects it by name", v.Name, p.Name)
			}
		}
		for _, profile := range p.Profiles {
			for _, expect := range []string{"allow", "deny"} {
				if expect == "allow" && alwaysDenies(p) {
					continue
				}
				if !covered[key{p.Name, profile, expect}] {
					t.Errorf("policy %s has no %s case in profile %s", p.Name, expect, profile)
				}
			}
		}
	}
}

// alwaysDenies reports whether every validation of p is `false`: such a
// policy refuses whatever it matches, and has no allow case to show.
func alwaysDenies(p policies.Policy) bool {
	for _, v := range p.Validations {
		if v.Expression != "false" {
			return false
		}
	}
	return true
}

// anyNames reports whether one of the expected messages contains rule.
func anyNames(messages map[string]bool, rule string) bool {
	for m := range messages {
		if strings.Contains(m, rule) {
			return true
		}
	}
	return false
}

// TestDocumented holds docs/policies.md to the rules: each one a refused
// person may read is named there. hack/policydocs writes that part (make
// generate); this catches a stale one in go test's fast loop too.
func TestDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/policies.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range policies.All() {
		for _, v := range p.Validations {
			if !strings.Contains(string(doc), "- `"+v.Name+"`") {
				t.Errorf("rule %s of %s is not in docs/policies.md: run make generate", v.Name, p.Name)
			}
		}
	}
}
