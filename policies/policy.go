// Package policies holds the plane's admission rules as data: one file per
// policy, each a set of CEL expressions with the words a person mid-incident
// reads when the cluster refuses them. Nothing here talks to a cluster; the
// vap package turns these into ValidatingAdmissionPolicies.
package policies

// Profile is the kind of cluster a policy set is built for.
type Profile string

const (
	// Ground is a development cluster: exec stays allowed, the debug
	// container's shape is still enforced.
	Ground Profile = "ground"
	// Flight is a production cluster: no exec, and only the portal adds or
	// attaches to debug containers.
	Flight Profile = "flight"
)

// Profiles lists every profile, in a fixed order.
var Profiles = []Profile{Ground, Flight}

// Operation is an admission operation.
type Operation string

// The admission operations the policies match.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Rule says which requests a policy sees.
type Rule struct {
	APIGroups []string
	// APIVersions are named, never "*": the API server's type checker skips
	// a rule with a wildcard version. Other versions of the same resources
	// still match, by equivalence.
	APIVersions []string
	Resources   []string // "pods/ephemeralcontainers" names a subresource
	Operations  []Operation
}

// Condition narrows a policy to the requests it is about; requests it does
// not match are not the policy's business. Conditions cannot read params.
type Condition struct {
	Name       string
	Expression string
	// Profiles limits the condition to some profiles; empty means all.
	Profiles []Profile
}

// Variable is a named CEL expression the validations share.
type Variable struct {
	Name       string
	Expression string
}

// Validation is one rule. Its Name leads every denial message, so a refused
// person and a reviewer can find the rule.
type Validation struct {
	Name       string
	Expression string
	// Message says what is wrong and what to change. MessageExpression, when
	// set, computes a more specific one (it may read variables, not authorizer).
	Message           string
	MessageExpression string
	// Reason is the HTTP status reason: Forbidden unless set.
	Reason string
	// Profiles limits the validation to some profiles; empty means all.
	Profiles []Profile
}

// Policy is one admission policy.
type Policy struct {
	// Name becomes the policy's and its binding's object name.
	Name    string
	Summary string
	// Profiles the policy is installed in.
	Profiles []Profile
	// Settings are the operator's settings the policy reads, each as the
	// variable the chart binds at install (vap.Build prepends them).
	Settings []Setting
	// SelectLabel, when set, narrows the binding to objects that carry this
	// label: the API server skips every other object before it builds
	// anything for CEL.
	SelectLabel string
	// ChartBound says the policy's binding is the chart's, rendered from
	// its values at install (which namespaces it covers, by
	// NamespaceSelector), not a generated file. Without those values the
	// policy is installed unbound and refuses nothing.
	ChartBound      bool
	Rules           []Rule
	MatchConditions []Condition
	Variables       []Variable
	Validations     []Validation
}

// In reports whether the policy is installed in profile p.
func (p Policy) In(profile Profile) bool { return has(p.Profiles, profile) }

// For returns the policy as it stands in profile: the conditions and
// validations limited to other profiles are left out.
func (p Policy) For(profile Profile) Policy {
	out := p
	out.MatchConditions = nil
	for _, c := range p.MatchConditions {
		if len(c.Profiles) == 0 || has(c.Profiles, profile) {
			out.MatchConditions = append(out.MatchConditions, c)
		}
	}
	out.Validations = nil
	for _, v := range p.Validations {
		if len(v.Profiles) == 0 || has(v.Profiles, profile) {
			out.Validations = append(out.Validations, v)
		}
	}
	return out
}

func has(profiles []Profile, p Profile) bool {
	for _, q := range profiles {
		if q == p {
			return true
		}
	}
	return false
}

// All returns every policy of the plane, in a fixed order.
func All() []Policy {
	return []Policy{
		GrantGuard(),
		GrantShape(),
		ProtectedNamespaces(),
		NamespaceOptIn(),
		NoDebugClusterRoleBinding(),
		PlaneBindsOnlyDebugRoles(),
		NoStandingPlaneBindings(),
		DebugContainer(),
		CopyPodGuard(),
		CopyPodShape(),
		CopyPodUpdates(),
		ReservedNames(),
		NoExec(),
		NoSideDoors(),
		Attach(),
		SessionRules(),
		SessionDelete(),
		SessionCRDs(),
		PlaneDeletesGrantsOnly(),
		PlaneDeletesDebuggedPodsOnly(),
		WebhookCABundleOnly(),
		WebhookOwnSecret(),
		PlaneEvents(),
		SweeperLease(),
		PlaneTokens(),
		PlaneTokenSecrets(),
		NodeAccess(),
	}
}
