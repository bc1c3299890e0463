package vap

import (
	"regexp"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/policies"
)

func TestBuildIsDeterministic(t *testing.T) {
	for _, p := range policies.Profiles {
		a, err := BuildAll(p, policies.DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := BuildAll(p, policies.DefaultParams())
		for i := range a {
			ya, _ := yaml.Marshal(a[i])
			yb, _ := yaml.Marshal(b[i])
			if string(ya) != string(yb) {
				t.Fatalf("%s: two builds differ", a[i].Policy.Name)
			}
		}
	}
}

func TestBuiltPoliciesFailClosed(t *testing.T) {
	for _, profile := range policies.Profiles {
		pairs, err := BuildAll(profile, policies.DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		// The chart-bound policies as the chart binds them for these values.
		pairs = Bind(pairs, ChartValues{ProtectedNamespaces: []string{"payments"}, RequireNamespaceOptIn: true})
		for _, pr := range pairs {
			names[pr.Policy.Name] = true
			if fp := pr.Policy.Spec.FailurePolicy; fp == nil || *fp != admissionregistrationv1.Fail {
				t.Errorf("%s: failurePolicy is not Fail", pr.Policy.Name)
			}
			if got := pr.Binding.Spec.ValidationActions; len(got) != 1 || got[0] != admissionregistrationv1.Deny {
				t.Errorf("%s: validationActions = %v, want [Deny]", pr.Binding.Name, got)
			}
			if pr.Binding.Spec.PolicyName != pr.Policy.Name {
				t.Errorf("%s: the binding names %s", pr.Policy.Name, pr.Binding.Spec.PolicyName)
			}
			if pr.Policy.Spec.ParamKind != nil || pr.Binding.Spec.ParamRef != nil {
				t.Errorf("%s: reads a params object an edit could move; its settings are rendered in", pr.Policy.Name)
			}
		}
		if got := names["breakglass-no-exec"]; got != (profile == policies.Flight) {
			t.Errorf("%s: no-exec installed = %v", profile, got)
		}
	}
}

// TestFlightHasEveryGroundRule holds Flight to be at least as strict as
// Ground: every Ground validation is also in Flight.
func TestFlightHasEveryGroundRule(t *testing.T) {
	rules := func(p policies.Profile) map[string]bool {
		out := map[string]bool{}
		for _, pol := range policies.All() {
			if !pol.In(p) {
				continue
			}
			for _, v := range pol.For(p).Validations {
				out[v.Name] = true
			}
		}
		return out
	}
	flight := rules(policies.Flight)
	for name := range rules(policies.Ground) {
		if !flight[name] {
			t.Errorf("rule %s is on Ground but not on Flight", name)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	good := func() policies.Policy {
		return policies.Policy{
			Name:            "breakglass-test",
			Profiles:        policies.Profiles,
			Rules:           []policies.Rule{{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Operations: []policies.Operation{policies.Create}}},
			MatchConditions: []policies.Condition{{Name: "ours", Expression: "object.metadata.name.startsWith('breakglass-')"}},
			Validations:     []policies.Validation{{Name: "t.ok", Expression: "true", Message: "[t.ok] fine."}},
		}
	}
	if err := Check(good(), policies.Ground); err != nil {
		t.Fatalf("the good policy: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*policies.Policy)
		want   string
	}{
		{"bad name", func(p *policies.Policy) { p.Name = "Bad_Name" }, "name"},
		{"no rules", func(p *policies.Policy) { p.Rules = nil }, "no rules"},
		{"wildcard version", func(p *policies.Policy) { p.Rules[0].APIVersions = []string{"*"} }, "the type checker skips wildcards"},
		{"no message", func(p *policies.Policy) { p.Validations[0].Message = "" }, "has no message"},
		{"message without its rule name", func(p *policies.Policy) { p.Validations[0].Message = "fine." }, "does not start with [t.ok]"},
		{"message with a line break", func(p *policies.Policy) { p.Validations[0].Message = "[t.ok] a\nb" }, "line break"},
		{"a validation named twice", func(p *policies.Policy) { p.Validations = append(p.Validations, p.Validations[0]) }, "named twice"},
		{"CEL that does not compile", func(p *policies.Policy) { p.Validations[0].Expression = "object.spec.(" }, "compilation failed"},
		{"CEL newer than the oldest Kubernetes", func(p *policies.Policy) { p.Validations[0].Expression = "isSemver('1.0.0')" }, "isSemver"},
		{"a variable that does not compile", func(p *policies.Policy) {
			p.Variables = []policies.Variable{{Name: "x", Expression: "object.(("}}
		}, "variable x"},
		{"ordinary work with no condition", func(p *policies.Policy) { p.MatchConditions = nil }, "no match condition or label selector"},
		{"a setting read but not bound", func(p *policies.Policy) {
			p.Validations[0].Expression = "'x' in " + policies.DebugImagesSetting.Ref()
		}, "validation t.ok"},
		{"a match condition that reads a setting", func(p *policies.Policy) {
			bound, err := (policies.Policy{Settings: []policies.Setting{policies.DebugImagesSetting}}).WithParams(policies.DefaultParams())
			if err != nil {
				t.Fatal(err)
			}
			p.Variables = bound.Variables
			p.MatchConditions = []policies.Condition{{Name: "c", Expression: "'x' in " + policies.DebugImagesSetting.Ref()}}
		}, "match condition c"},
		{"a match condition that reads params", func(p *policies.Policy) {
			p.MatchConditions = []policies.Condition{{Name: "c", Expression: "params.spec.x == 1"}}
		}, "match condition c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := good()
			tc.mutate(&p)
			err := Check(p, policies.Ground)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// namespaceField is a field called namespace selected on something (not
// a string's '[grant.namespace]', not the authorizer's namespace()).
var namespaceField = regexp.MustCompile(`\.\??namespace\b[^(\]-]`)

// reachedThroughDyn says whether the selection at i follows request, or a
// call of dyn().
func reachedThroughDyn(e string, i int) bool {
	before := e[:i]
	if strings.HasSuffix(before, "request") {
		return true
	}
	if !strings.HasSuffix(before, ")") {
		return false
	}
	depth := 0
	for j := len(before) - 1; j >= 0; j-- {
		switch before[j] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				return strings.HasSuffix(before[:j], "dyn")
			}
		}
	}
	return false
}

// TestReservedFieldsThroughDyn: `namespace` is a CEL reserved word. v1.30's
// type checker warns `undefined field 'namespace'` on a schema's field of
// that name (newer ones map it), while at run time objects are schemaless,
// so the escaped __namespace__ finds nothing. Through dyn() the field is
// not type-checked and is found by its name on every version (test/oldest
// reads v1.30's own verdict).
func TestReservedFieldsThroughDyn(t *testing.T) {
	for _, profile := range policies.Profiles {
		pairs, err := BuildAll(profile, policies.DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range pairs {
			s := pr.Policy.Spec
			var exprs []string
			for _, v := range s.Validations {
				exprs = append(exprs, v.Expression, v.MessageExpression)
			}
			for _, v := range s.Variables {
				exprs = append(exprs, v.Expression)
			}
			for _, m := range s.MatchConditions {
				exprs = append(exprs, m.Expression)
			}
			for _, e := range exprs {
				e += " "
				for _, at := range namespaceField.FindAllStringIndex(e, -1) {
					if !reachedThroughDyn(e, at[0]) {
						t.Errorf("%s: %q: reach the namespace field through dyn()", pr.Policy.Name, e[max(0, at[0]-30):at[1]])
					}
				}
			}
		}
	}
}
