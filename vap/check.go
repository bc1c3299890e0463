package vap

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/tower-dev/breakglass/policies"
)

// OldestKubernetes is the oldest Kubernetes minor version the plane supports.
// Every expression must compile in its CEL environment as a new expression,
// so nothing passes here and is then refused by an older API server.
var OldestKubernetes = version.MajorMinor(1, 30)

// Check says whether p can be built for profile, and why not: names, rules,
// messages a person can read, and every CEL expression compiled as a new
// expression in the API server's environment for OldestKubernetes.
func Check(p policies.Policy, profile policies.Profile) error {
	p = p.For(profile)
	if errs := validation.IsDNS1123Subdomain(p.Name); len(errs) > 0 {
		return fmt.Errorf("policy %q: name: %s", p.Name, strings.Join(errs, "; "))
	}
	if len(p.Rules) == 0 {
		return fmt.Errorf("policy %s: no rules: it would match nothing", p.Name)
	}
	if len(p.Validations) == 0 {
		return fmt.Errorf("policy %s (%s): no validations", p.Name, profile)
	}
	for _, r := range p.Rules {
		if len(r.APIVersions) == 0 {
			return fmt.Errorf("policy %s: a rule names no API version", p.Name)
		}
		for _, v := range r.APIVersions {
			if strings.Contains(v, "*") {
				return fmt.Errorf("policy %s: API version %q: name versions, the type checker skips wildcards", p.Name, v)
			}
		}
	}
	if err := checkOrdinaryWork(p); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, v := range p.Validations {
		switch {
		case v.Name == "":
			return fmt.Errorf("policy %s: a validation has no name", p.Name)
		case seen[v.Name]:
			return fmt.Errorf("policy %s: validation %s is named twice", p.Name, v.Name)
		case v.Message == "" && v.MessageExpression == "":
			return fmt.Errorf("policy %s: validation %s has no message", p.Name, v.Name)
		case strings.ContainsAny(v.Message, "\r\n"):
			return fmt.Errorf("policy %s: validation %s: the message has a line break", p.Name, v.Name)
		case v.Message != "" && !strings.HasPrefix(v.Message, "["+v.Name+"] "):
			return fmt.Errorf("policy %s: validation %s: the message does not start with [%s]", p.Name, v.Name, v.Name)
		}
		seen[v.Name] = true
	}
	for _, issue := range compileAll(p, environment.MustBaseEnvSet(OldestKubernetes), environment.NewExpressions) {
		return fmt.Errorf("policy %s: %s", p.Name, issue)
	}
	return nil
}

// planeOwned are the requests every one of which is the plane's business:
// its own kinds, and debug containers (on Flight only the portal adds them;
// on Ground every one is held to the debug container's shape).
var planeOwned = map[string]bool{"breakglass.tower.dev": true, "/pods/ephemeralcontainers": true}

// checkOrdinaryWork holds a policy that sees the cluster's ordinary writes
// (a ReplicaSet's pods, anyone's RoleBindings, every controller's Events
// and Leases) to letting them go cheaply: a match condition or a label
// selector says which requests are its business. CONNECT requests (exec,
// attach, port-forward) are not ordinary work on a production cluster: the
// policies judge them all.
func checkOrdinaryWork(p policies.Policy) error {
	for _, r := range p.Rules {
		if len(r.Operations) == 1 && r.Operations[0] == policies.Connect {
			continue
		}
		for _, g := range r.APIGroups {
			if planeOwned[g] {
				continue
			}
			for _, res := range r.Resources {
				if planeOwned[g+"/"+res] {
					continue
				}
				if len(p.MatchConditions) == 0 && p.SelectLabel == "" {
					return fmt.Errorf("policy %s sees every %s write but has no match condition or label selector to let the cluster's other work go", p.Name, res)
				}
			}
		}
	}
	return nil
}

// compileAll compiles every expression of p in envSet and returns one line
// per expression that does not compile.
func compileAll(p policies.Policy, envSet *environment.EnvSet, mode environment.Type) []string {
	compiler, err := plugincel.NewCompositedCompiler(envSet)
	if err != nil {
		return []string{err.Error()}
	}
	withAuthz := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	noAuthz := plugincel.OptionalVariableDeclarations{HasAuthorizer: false}
	var issues []string
	report := func(what string, r plugincel.CompilationResult) {
		if r.Error != nil {
			issues = append(issues, fmt.Sprintf("%s: %v", what, r.Error))
		}
	}
	// Match conditions see no variables in the API server.
	condCompiler, err := plugincel.NewCompositedCompiler(envSet)
	if err != nil {
		return []string{err.Error()}
	}
	for _, c := range p.MatchConditions {
		report("match condition "+c.Name, condCompiler.CompileCELExpression(
			&validating.ValidationCondition{Expression: c.Expression},
			plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, mode))
	}
	for _, v := range p.Variables {
		report("variable "+v.Name, compiler.CompileAndStoreVariable(
			&validating.Variable{Name: v.Name, Expression: v.Expression}, withAuthz, mode))
	}
	for _, v := range p.Validations {
		report("validation "+v.Name, compiler.CompileCELExpression(
			&validating.ValidationCondition{Expression: v.Expression, Message: v.Message}, withAuthz, mode))
		if v.MessageExpression != "" {
			report("validation "+v.Name+" messageExpression", compiler.CompileCELExpression(
				&validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}, noAuthz, mode))
		}
	}
	return issues
}
