// Package vap turns the policies package's rules into ValidatingAdmissionPolicy
// and ValidatingAdmissionPolicyBinding objects, checks them with the API
// server's own CEL environment, and evaluates them offline with the API
// server's own evaluator. Builders are pure and deterministic: the same
// policy and profile give byte-for-byte the same objects.
package vap

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
)

// ProfileLabel marks every built object with the profile it was built for.
const ProfileLabel = "breakglass.tower.dev/profile"

// Pair is a policy and its binding.
type Pair struct {
	Policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	Binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// BuildAll builds every policy installed in profile, in the policies
// package's order, with params rendered in. It fails if params or any
// policy does not pass Check.
func BuildAll(profile policies.Profile, params policies.Params) ([]Pair, error) {
	if errs := params.Validate(); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	var out []Pair
	for _, p := range policies.All() {
		if !p.In(profile) {
			continue
		}
		bound, err := p.WithParams(params)
		if err != nil {
			return nil, err
		}
		if err := Check(bound, profile); err != nil {
			return nil, err
		}
		out = append(out, Build(bound, profile))
	}
	return out, nil
}

// Build makes the policy and binding for p as it stands in profile. It does
// not check p, nor bind its settings; call WithParams and Check first.
func Build(p policies.Policy, profile policies.Profile) Pair {
	p = p.For(profile)
	fail := admissionregistrationv1.Fail
	equivalent := admissionregistrationv1.Equivalent
	allScopes := admissionregistrationv1.AllScopes
	meta := metav1.ObjectMeta{
		Name: p.Name,
		Labels: map[string]string{
			"app.kubernetes.io/part-of": "breakglass",
			ProfileLabel:                string(profile),
		},
		Annotations: map[string]string{"breakglass.tower.dev/summary": p.Summary},
	}

	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: meta,
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				MatchPolicy: &equivalent,
			},
		},
	}
	for _, r := range p.Rules {
		ops := make([]admissionregistrationv1.OperationType, len(r.Operations))
		for i, o := range r.Operations {
			ops[i] = admissionregistrationv1.OperationType(o)
		}
		policy.Spec.MatchConstraints.ResourceRules = append(policy.Spec.MatchConstraints.ResourceRules,
			admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: ops,
				Rule: admissionregistrationv1.Rule{
					APIGroups:   r.APIGroups,
					APIVersions: r.APIVersions,
					Resources:   r.Resources,
					Scope:       &allScopes,
				},
			}})
	}
	for _, c := range p.MatchConditions {
		policy.Spec.MatchConditions = append(policy.Spec.MatchConditions,
			admissionregistrationv1.MatchCondition{Name: c.Name, Expression: c.Expression})
	}
	for _, v := range p.Variables {
		policy.Spec.Variables = append(policy.Spec.Variables,
			admissionregistrationv1.Variable{Name: v.Name, Expression: v.Expression})
	}
	for _, v := range p.Validations {
		reason := metav1.StatusReasonForbidden
		if v.Reason != "" {
			reason = metav1.StatusReason(v.Reason)
		}
		policy.Spec.Validations = append(policy.Spec.Validations, admissionregistrationv1.Validation{
			Expression:        v.Expression,
			Message:           v.Message,
			MessageExpression: v.MessageExpression,
			Reason:            &reason,
		})
	}

	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: *meta.DeepCopy(),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        p.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if p.SelectLabel != "" {
		binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: p.SelectLabel, Operator: metav1.LabelSelectorOpExists,
			}}},
		}
	}
	if p.ChartBound {
		// The chart renders it from its values (Bind).
		binding = nil
	}
	return Pair{Policy: policy, Binding: binding}
}

// ChartValues are the chart's values that bind its ChartBound policies,
// fixed at install.
type ChartValues struct {
	// ProtectedNamespaces never receive a grant, beyond the system ones.
	ProtectedNamespaces []string
	// RequireNamespaceOptIn lets grants only into namespaces labelled
	// breakglass.tower.dev/enabled=true.
	RequireNamespaceOptIn bool
}

// Bind gives the ChartBound policies among pairs the bindings the chart
// renders from v (templates/namespaces.yaml renders the same); a policy v
// leaves unbound keeps no binding and refuses nothing.
func Bind(pairs []Pair, v ChartValues) []Pair {
	out := make([]Pair, len(pairs))
	for i, pr := range pairs {
		out[i] = pr
		var sel *metav1.LabelSelector
		switch pr.Policy.Name {
		case policies.ProtectedNamespaces().Name:
			if len(v.ProtectedNamespaces) > 0 {
				sel = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: v.ProtectedNamespaces}}}
			}
		case policies.NamespaceOptIn().Name:
			if v.RequireNamespaceOptIn {
				sel = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: v1alpha1.NamespaceOptInLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"}}}}
			}
		default:
			continue
		}
		if sel == nil {
			continue
		}
		out[i].Binding = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: *pr.Policy.ObjectMeta.DeepCopy(),
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        pr.Policy.Name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: sel},
			},
		}
	}
	return out
}
