package vap

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/tower-dev/breakglass/policies"
)

// TestTemplateFailsClosed: the chart's files installed without their
// template's rendering compile (so the API server admits every policy)
// and deny every request a setting decides, saying which setting.
func TestTemplateFailsClosed(t *testing.T) {
	files, err := LoadCaseDir("../policies/testdata")
	if err != nil {
		t.Fatal(err)
	}
	var req *Request
	for _, cf := range files {
		for _, c := range cf.Cases {
			if c.Name == "the portal adds a compliant debug container" {
				r := c.request()
				req = &r
			}
		}
	}
	if req == nil {
		t.Fatal("no compliant debug container among the cases")
	}
	for _, profile := range policies.Profiles {
		pairs, err := BuildTemplate(profile)
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range pairs {
			for _, issue := range compileBuilt(pr) {
				t.Errorf("%s: the unrendered policy does not compile: %s", pr.Policy.Name, issue)
			}
		}
		res := NewEvaluator(pairs).Evaluate(context.Background(), *req)
		if res.Allowed() || !strings.Contains(res.Denials[0].Message, `variable "`+policies.DebugImagesSetting.Variable+`" fails to evaluate`) {
			t.Errorf("%s: a debug container under unrendered policies: %+v, want it denied naming the setting", profile, res)
		}
	}
}

// compileBuilt compiles every expression of a built policy as the API
// server compiles a new policy's, at the oldest version the plane claims.
func compileBuilt(pr Pair) []string {
	spec := pr.Policy.Spec
	p := policies.Policy{Name: pr.Policy.Name}
	for _, c := range spec.MatchConditions {
		p.MatchConditions = append(p.MatchConditions, policies.Condition{Name: c.Name, Expression: c.Expression})
	}
	for _, v := range spec.Variables {
		p.Variables = append(p.Variables, policies.Variable{Name: v.Name, Expression: v.Expression})
	}
	for i, v := range spec.Validations {
		p.Validations = append(p.Validations, policies.Validation{Name: fmt.Sprint(i), Expression: v.Expression, MessageExpression: v.MessageExpression})
	}
	return compileAll(p, environment.MustBaseEnvSet(OldestKubernetes), environment.NewExpressions)
}
