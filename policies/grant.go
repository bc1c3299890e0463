package policies

import (
	"fmt"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// systemNamespacesExpr is the CEL list of the namespaces no grant ever enters.
var systemNamespacesExpr = celList(v1alpha1.SystemNamespaces)

// bindsDebugRole matches a binding whose roleRef is one of the debug ClusterRoles.
var bindsDebugRole = Condition{
	Name:       "binds-a-debug-role",
	Expression: fmt.Sprintf(`object.roleRef.kind == 'ClusterRole' && object.roleRef.name in %s`, debugRolesExpr),
}

// GrantGuard holds every RoleBinding to a debug role, by any user, cluster
// admins included, to what needs no setting: one ServiceAccount subject from
// the plane's namespace, a session label, a well-formed TTL label, and labels
// that never change. Its session label is what brings the binding under
// GrantShape, which checks its TTL against the chart's bounds.
func GrantGuard() Policy {
	ttl := q(v1alpha1.TTLLabel)
	session := q(v1alpha1.SessionLabel)
	return Policy{
		Name:            "breakglass-grant-guard",
		Summary:         "RoleBindings to the debug roles: one plane ServiceAccount, a session label, a TTL label, neither ever changed.",
		Profiles:        Profiles,
		Rules:           []Rule{debugRoleBindingWrites},
		MatchConditions: []Condition{bindsDebugRole},
		Variables: []Variable{
			{Name: "labels", Expression: `has(object.metadata.labels) ? object.metadata.labels : {}`},
			{Name: "oldLabels", Expression: `request.operation == 'UPDATE' && has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}`},
			{Name: "ttl", Expression: fmt.Sprintf(`%s in variables.labels ? variables.labels[%s] : ''`, ttl, ttl)},
		},
		Validations: []Validation{
			{
				Name:       "grant.system-namespace",
				Expression: fmt.Sprintf(`!(request.namespace in %s)`, systemNamespacesExpr),
				MessageExpression: `'[grant.system-namespace] namespace ' + request.namespace +
					' is one of the cluster\'s own: break-glass grants are never made here, whatever the chart\'s values say.'`,
			},
			{
				Name: "grant.subject",
				Expression: fmt.Sprintf(`has(object.subjects) && size(object.subjects) == 1 &&
					object.subjects[0].kind == 'ServiceAccount' && object.subjects[0].name == '%s' &&
					has(dyn(object.subjects[0]).namespace) && dyn(object.subjects[0]).namespace == '%s'`, v1alpha1.PortalServiceAccount, v1alpha1.Namespace),
				Message: fmt.Sprintf("[grant.subject] a debug role is bound only to the portal: exactly one subject, ServiceAccount %s/%s. Request a session through the portal instead of binding a person.",
					v1alpha1.Namespace, v1alpha1.PortalServiceAccount),
			},
			{
				// A finalizer would keep a deleted grant standing: RBAC
				// honours a binding until it is gone, and nobody of the
				// plane may lift it.
				Name:       "grant.no-finalizers",
				Expression: `object.metadata.?finalizers.orValue([]).size() == 0`,
				Message:    "[grant.no-finalizers] a grant carries no finalizers: it must go the moment the sweeper or the relay deletes it.",
			},
			{
				Name:       "grant.session-label",
				Expression: fmt.Sprintf(`%s in variables.labels && variables.labels[%s] != ''`, session, session),
				Message:    fmt.Sprintf("[grant.session-label] a grant names its Session in the label %s.", v1alpha1.SessionLabel),
			},
			{
				Name:       "grant.ttl-format",
				Expression: fmt.Sprintf(`variables.ttl != '' && size(variables.ttl) <= 16 && variables.ttl.matches('%s')`, durationPattern),
				MessageExpression: fmt.Sprintf(`'[grant.ttl-format] a grant needs the label %s with a Go duration such as 30m; ' +
					(variables.ttl == '' ? 'it has none.' : 'it has ' + variables.ttl + '.')`, v1alpha1.TTLLabel),
			},
			{
				Name: "grant.ttl-immutable",
				Expression: fmt.Sprintf(`request.operation != 'UPDATE' ||
					(%s in variables.oldLabels && variables.ttl == variables.oldLabels[%s] &&
					 %s in variables.oldLabels && %s in variables.labels && variables.labels[%s] == variables.oldLabels[%s])`,
					ttl, ttl, session, session, session, session),
				Message: fmt.Sprintf("[grant.ttl-immutable] a grant's %s and %s labels never change: end the session and start another to get more time.",
					v1alpha1.TTLLabel, v1alpha1.SessionLabel),
			},
		},
	}
}

// GrantShape checks a session grant's TTL against the chart's bounds. Who
// the grant names (the portal, fixed: GrantGuard) and where it may be made
// (the system namespaces, GrantGuard; the chart's protected namespaces and
// opt-in, ProtectedNamespaces and NamespaceOptIn) are checked apart.
func GrantShape() Policy {
	return Policy{
		Name:            "breakglass-grant-shape",
		Summary:         "Session grants: only briefly.",
		Profiles:        Profiles,
		Settings:        []Setting{GrantTTLMinSetting, GrantTTLMaxSetting},
		SelectLabel:     v1alpha1.SessionLabel,
		Rules:           []Rule{debugRoleBindingWrites},
		MatchConditions: []Condition{bindsDebugRole},
		Variables: []Variable{
			{Name: "ttl", Expression: fmt.Sprintf(`%[1]s in object.metadata.labels ? object.metadata.labels[%[1]s] : ''`, q(v1alpha1.TTLLabel))},
			// A malformed TTL is GrantGuard's to refuse, with its own words.
			{Name: "ttlWellFormed", Expression: fmt.Sprintf(`size(variables.ttl) <= 16 && variables.ttl.matches('%s') && variables.ttl != ''`, durationPattern)},
		},
		Validations: []Validation{
			{
				Name: "grant.ttl",
				Expression: `!variables.ttlWellFormed ||
					(duration(variables.ttl) >= duration(variables.paramsGrantTTLMin) &&
					 duration(variables.ttl) <= duration(variables.paramsGrantTTLMax))`,
				MessageExpression: fmt.Sprintf(`'[grant.ttl] a grant lives from ' + variables.paramsGrantTTLMin + ' to ' +
					variables.paramsGrantTTLMax + ' (label %s); it asks for ' + variables.ttl + '.'`, v1alpha1.TTLLabel),
			},
		},
	}
}

// debugRoleBindingWrites are the RoleBinding writes the grant policies see.
var debugRoleBindingWrites = Rule{
	APIGroups:   []string{"rbac.authorization.k8s.io"},
	APIVersions: []string{"v1"},
	Resources:   []string{"rolebindings"},
	Operations:  []Operation{Create, Update},
}

// ProtectedNamespaces refuses every grant in the namespaces the chart's
// values protect (params.protectedNamespaces), beyond the system ones
// GrantGuard names: its binding, which the chart renders at install,
// selects them by name (kubernetes.io/metadata.name, which the API server
// sets and nobody can change), so only a `helm upgrade` unprotects one.
func ProtectedNamespaces() Policy {
	return Policy{
		Name:            "breakglass-grant-protected-namespaces",
		Summary:         "No grant in a namespace the chart protects.",
		Profiles:        Profiles,
		ChartBound:      true,
		Rules:           []Rule{debugRoleBindingWrites},
		MatchConditions: []Condition{bindsDebugRole},
		Validations: []Validation{{
			Name:       "grant.namespace",
			Expression: `false`,
			MessageExpression: `'[grant.namespace] namespace ' + request.namespace +
				' is protected: break-glass grants are never made here. Debug the workload in its own namespace.'`,
		}},
	}
}

// NamespaceOptIn is the policy that, when the chart requires namespaces to
// opt in (params.requireNamespaceOptIn), refuses grants in every namespace not
// labelled breakglass.tower.dev/enabled=true: its binding selects them.
func NamespaceOptIn() Policy {
	return Policy{
		Name:            "breakglass-grant-namespace-opt-in",
		Summary:         "Grants only in namespaces that opted in, when the chart requires it.",
		Profiles:        Profiles,
		ChartBound:      true,
		Rules:           []Rule{debugRoleBindingWrites},
		MatchConditions: []Condition{bindsDebugRole},
		Validations: []Validation{{
			Name:       "grant.namespace-opt-in",
			Expression: `false`,
			MessageExpression: fmt.Sprintf(`'[grant.namespace-opt-in] namespace ' + request.namespace +
				' has not opted in to break-glass grants: a cluster admin labels it %s=true.'`, v1alpha1.NamespaceOptInLabel),
		}},
	}
}

// NoDebugClusterRoleBinding refuses any ClusterRoleBinding to a debug role: a
// grant is always one namespace.
func NoDebugClusterRoleBinding() Policy {
	return Policy{
		Name:     "breakglass-no-debug-clusterrolebinding",
		Summary:  "The debug roles are never bound cluster-wide.",
		Profiles: Profiles,
		Rules: []Rule{{
			APIGroups:   []string{"rbac.authorization.k8s.io"},
			APIVersions: []string{"v1"},
			Resources:   []string{"clusterrolebindings"},
			Operations:  []Operation{Create, Update},
		}},
		MatchConditions: []Condition{bindsDebugRole},
		Validations: []Validation{{
			Name:       "grant.cluster-wide",
			Expression: `false`,
			Message:    "[grant.cluster-wide] the debug roles are never bound cluster-wide: use a RoleBinding in the app's namespace, made by the portal.",
		}},
	}
}

// PlaneBindsOnlyDebugRoles keeps the plane's own bindings to the debug roles:
// even if the portal's at-rest role were widened by mistake, it could not
// bind itself anything else.
func PlaneBindsOnlyDebugRoles() Policy {
	return Policy{
		Name:            "breakglass-plane-binds-only-debug-roles",
		Summary:         "The plane's ServiceAccounts bind the two debug roles and nothing else.",
		Profiles:        Profiles,
		Rules:           []Rule{bindingWrites},
		MatchConditions: []Condition{planeUserCondition},
		Validations: []Validation{{
			Name: "portal.binds-only-debug-roles",
			Expression: fmt.Sprintf(`request.resource.resource == 'rolebindings' &&
				object.roleRef.kind == 'ClusterRole' && object.roleRef.name in %s`, debugRolesExpr),
			Message: fmt.Sprintf("[portal.binds-only-debug-roles] the portal may only create RoleBindings to %s or %s.",
				v1alpha1.DebugRole, v1alpha1.DebugProcessRole),
		}},
	}
}
