package vap

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// CostLimit is what the plane allows one expression to cost on one request:
// 1% of the API server's per-expression limit.
const CostLimit = celconfig.PerCallLimit / 100

// AuthorizerCheckCost is the flat charge the API server's cost model puts on
// one authorizer check ("set to allow for only two authorization checks per
// expression"). An expression that must ask the authorizer pays it whatever
// else it does.
const AuthorizerCheckCost = 350000

// ExpressionCost is the runtime cost of one validation on one request,
// counted by the API server's own cost tracker, including the variables it
// reads.
type ExpressionCost struct {
	Policy     string
	Validation int
	Cost       int64
	// Checks is how many authorizer checks the expression can make.
	Checks int
}

// Own is the cost without the flat charge of the authorizer checks it made.
func (c ExpressionCost) Own() int64 {
	made := min(int64(c.Checks), c.Cost/AuthorizerCheckCost)
	return c.Cost - made*AuthorizerCheckCost
}

// Costs evaluates each validation of each policy that matches req on its
// own, with the API server's runtime cost tracking, and reports what each
// cost. The API server enforces its limits on this runtime cost; a static
// estimate of an expression that walks a pod's containers is bounded only by
// the request size, so it says little about real requests.
func (e *Evaluator) Costs(ctx context.Context, req Request) ([]ExpressionCost, error) {
	attr, versioned, ns, authz := req.attributes()
	var out []ExpressionCost
	for _, p := range e.policies {
		if p.pair.Binding == nil || !matchesRules(p.pair.Policy, attr) || !matchesObjectSelector(p.pair.Binding, req) ||
			!matchesNamespaceSelector(p.pair.Binding, req) {
			continue
		}
		policy := p.pair.Policy
		compiler, err := newCompiler(policy)
		if err != nil {
			return nil, err
		}
		opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
		request := plugincel.CreateAdmissionRequest(attr, metav1.GroupVersionResource(req.Resource), metav1.GroupVersionKind(req.Kind))
		for i, v := range policy.Spec.Validations {
			eval := compiler.CompileCondition([]plugincel.ExpressionAccessor{
				&validating.ValidationCondition{Expression: v.Expression, Message: v.Message},
			}, opts, environment.StoredExpressions)
			_, remaining, err := eval.ForInput(ctx, versioned, request,
				plugincel.OptionalVariableBindings{Authorizer: authz},
				plugincel.CreateNamespaceObject(ns), celconfig.RuntimeCELCostBudget)
			if err != nil {
				return nil, fmt.Errorf("%s validation %d: %w", policy.Name, i, err)
			}
			// An expression that errors is a denial, which the cases judge; its cost is what it spent.
			out = append(out, ExpressionCost{Policy: policy.Name, Validation: i, Cost: celconfig.RuntimeCELCostBudget - remaining,
				Checks: strings.Count(v.Expression, ".check(")})
		}
	}
	return out, nil
}

// newCompiler is a compiler with the policy's variables stored, as compile makes.
func newCompiler(policy *admissionregistrationv1.ValidatingAdmissionPolicy) (*plugincel.CompositedCompiler, error) {
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, err
	}
	var variables []plugincel.NamedExpressionAccessor
	for _, v := range policy.Spec.Variables {
		variables = append(variables, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(variables,
		plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}, environment.StoredExpressions)
	return compiler, nil
}
