package vap

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Request is one admission request, as the API server would present it to
// the policies.
type Request struct {
	Operation   admissionregistrationv1.OperationType
	Resource    schema.GroupVersionResource
	SubResource string
	Kind        schema.GroupVersionKind
	Namespace   string
	// NamespaceLabels are the labels of the namespace object policies see,
	// NamespacePhase its phase (Terminating while it is deleted).
	NamespaceLabels map[string]string
	NamespacePhase  corev1.NamespacePhase
	Name            string
	// Object and OldObject are the new and old object; for CONNECT, Object
	// is the options (PodExecOptions, PodAttachOptions).
	Object    map[string]any
	OldObject map[string]any
	User      user.Info
	// Allowed lists what the authorizer answers "allowed" to; it answers
	// "no opinion" to anything else, as RBAC does.
	Allowed []Permission
}

// Permission is one authorizer answer: the user may Verb the Resource (and
// Subresource) of Group in Namespace ("" for cluster-wide).
type Permission struct {
	Group       string `json:"group"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Verb        string `json:"verb"`
}

// Denial is one policy's refusal.
type Denial struct {
	Policy  string
	Binding string
	// Message is the validation's message, as the API server words it.
	Message string
}

// Error is the refusal as the API server words it to the client.
func (d Denial) Error() string {
	return fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", d.Policy, d.Binding, d.Message)
}

// Result is what the policies decided on a request.
type Result struct {
	// Matched names the policies whose rules and match conditions selected the request.
	Matched []string
	Denials []Denial
}

// Allowed reports whether no policy denied the request.
func (r Result) Allowed() bool { return len(r.Denials) == 0 }

type compiledPolicy struct {
	pair      Pair
	validator validating.Validator
}

// Evaluator runs built policies on requests offline, with the API server's
// own compiler and evaluator.
type Evaluator struct {
	policies []compiledPolicy
}

// NewEvaluator compiles pairs the way the API server's ValidatingAdmissionPolicy
// plugin compiles a policy it loads.
func NewEvaluator(pairs []Pair) *Evaluator {
	e := &Evaluator{}
	for _, pr := range pairs {
		e.policies = append(e.policies, compiledPolicy{pair: pr, validator: compile(pr.Policy)})
	}
	return e
}

// compile mirrors the API server's compilePolicy: match conditions and
// validations see the authorizer, message expressions do not.
func compile(policy *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	hasParams := policy.Spec.ParamKind != nil // only the benchmarks' baseline reads a params object
	withAuthz := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	noAuthz := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: false}
	compiler, err := newCompiler(policy)
	if err != nil {
		return validating.NewValidator(nil, nil, nil, nil, policy.Spec.FailurePolicy, err)
	}

	var matcher matchconditions.Matcher
	if len(policy.Spec.MatchConditions) > 0 {
		conditions := make([]plugincel.ExpressionAccessor, len(policy.Spec.MatchConditions))
		for i := range policy.Spec.MatchConditions {
			conditions[i] = (*matchconditions.MatchCondition)(&policy.Spec.MatchConditions[i])
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(conditions, withAuthz, environment.StoredExpressions),
			policy.Spec.FailurePolicy, "policy", "validate", policy.Name)
	}
	validations := make([]plugincel.ExpressionAccessor, len(policy.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(policy.Spec.Validations))
	for i, v := range policy.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
	}
	return validating.NewValidator(
		compiler.CompileCondition(validations, withAuthz, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(nil, withAuthz, environment.StoredExpressions),
		compiler.CompileCondition(messages, noAuthz, environment.StoredExpressions),
		policy.Spec.FailurePolicy, nil)
}

// attributes builds what the API server hands its admission plugins.
func (req Request) attributes() (admission.Attributes, *admission.VersionedAttributes, *corev1.Namespace, permissions) {
	var obj, oldObj runtime.Object
	if req.Object != nil {
		obj = &unstructured.Unstructured{Object: req.Object}
	}
	if req.OldObject != nil {
		oldObj = &unstructured.Unstructured{Object: req.OldObject}
	}
	attr := admission.NewAttributesRecord(obj, oldObj, req.Kind, req.Namespace, req.Name, req.Resource, req.SubResource,
		admission.Operation(req.Operation), nil, false, req.User)
	versioned := &admission.VersionedAttributes{Attributes: attr, VersionedKind: req.Kind, VersionedObject: admission.NewLazyObject(obj), VersionedOldObject: admission.NewLazyObject(oldObj)}
	var ns *corev1.Namespace
	if req.Namespace != "" {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: req.Namespace, Labels: req.NamespaceLabels},
			Status: corev1.NamespaceStatus{Phase: req.NamespacePhase}}
	}
	return attr, versioned, ns, permissions{allowed: req.Allowed}
}

// Evaluate runs every policy whose rules match req.
func (e *Evaluator) Evaluate(ctx context.Context, req Request) Result {
	return e.evaluate(ctx, req, nil)
}

// evaluate is Evaluate with a params object for the policies that name a
// ParamKind: the design the chart's rendered settings replaced, kept as
// the benchmarks' baseline.
func (e *Evaluator) evaluate(ctx context.Context, req Request, params runtime.Object) Result {
	attr, versioned, ns, authz := req.attributes()
	var result Result
	for _, p := range e.policies {
		if p.pair.Binding == nil || !matchesRules(p.pair.Policy, attr) || !matchesObjectSelector(p.pair.Binding, req) ||
			!matchesNamespaceSelector(p.pair.Binding, req) {
			continue
		}
		deny := func(msg string) {
			result.Denials = append(result.Denials, Denial{Policy: p.pair.Policy.Name, Binding: p.pair.Binding.Name, Message: msg})
		}
		var versionedParams runtime.Object
		if p.pair.Policy.Spec.ParamKind != nil {
			versionedParams = params
		}
		vr := p.validator.Validate(ctx, req.Resource, versioned, versionedParams, ns, celconfig.RuntimeCELCostBudget, authz)
		if len(vr.Decisions) == 0 {
			// The match conditions left the request out.
			continue
		}
		result.Matched = append(result.Matched, p.pair.Policy.Name)
		for _, d := range vr.Decisions {
			if d.Action == validating.ActionDeny {
				deny(d.Message)
			}
		}
	}
	return result
}

func matchesRules(policy *admissionregistrationv1.ValidatingAdmissionPolicy, attr admission.Attributes) bool {
	for _, r := range policy.Spec.MatchConstraints.ResourceRules {
		if (&rules.Matcher{Rule: r.RuleWithOperations, Attr: attr}).Matches() {
			return true
		}
	}
	return false
}

// matchesObjectSelector reports whether the binding's object selector selects
// the new or the old object, as the API server decides it.
func matchesObjectSelector(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, req Request) bool {
	if b.Spec.MatchResources == nil || b.Spec.MatchResources.ObjectSelector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.MatchResources.ObjectSelector)
	if err != nil {
		return true // an unusable selector fails closed: the policy runs
	}
	for _, o := range []map[string]any{req.Object, req.OldObject} {
		if o != nil && sel.Matches(labels.Set((&unstructured.Unstructured{Object: o}).GetLabels())) {
			return true
		}
	}
	return false
}

// matchesNamespaceSelector reports whether the binding's namespace selector
// selects the request's namespace, whose labels include its name
// (kubernetes.io/metadata.name), as the API server sets it. A cluster-wide
// request is selected, as the API server selects one.
func matchesNamespaceSelector(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, req Request) bool {
	if b.Spec.MatchResources == nil || b.Spec.MatchResources.NamespaceSelector == nil || req.Namespace == "" {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.MatchResources.NamespaceSelector)
	if err != nil {
		return true // fails closed, as above
	}
	set := labels.Set{corev1.LabelMetadataName: req.Namespace}
	for k, v := range req.NamespaceLabels {
		if k != corev1.LabelMetadataName {
			set[k] = v
		}
	}
	return sel.Matches(set)
}

// permissions is an authorizer that answers from a fixed list, for offline
// evaluation; on a cluster the real authorizer (RBAC) answers.
type permissions struct{ allowed []Permission }

func (p permissions) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	for _, perm := range p.allowed {
		if perm.Group == a.GetAPIGroup() && perm.Resource == a.GetResource() && perm.Subresource == a.GetSubresource() &&
			(perm.Namespace == "" || perm.Namespace == a.GetNamespace()) && strings.EqualFold(perm.Verb, a.GetVerb()) {
			return authorizer.DecisionAllow, "listed in the case", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}
