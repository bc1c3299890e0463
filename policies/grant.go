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
// admins included, to what needs no params: one ServiceAccount subject from
// the plane's namespace, a session label, a well-formed TTL label, and labels
// that never change. Its session label is what brings the binding under
// GrantShape, which checks the rest against the params.
func GrantGuard() Policy {
	ttl := q(v1alpha1.TTLLabel)
	session := q(v1alpha1.SessionLabel)
	return Policy{
		Name:     "breakglass-grant-guard",
		Summary:  "RoleBindings to the debug roles: one plane ServiceAccount, a session label, a TTL label, neither ever changed.",
		Profiles: Profiles,
		Rules: []Rule{{
			APIGroups:   []string{"rbac.authorization.k8s.io"},
			APIVersions: []string{"v1"},
			Resources:   []string{"rolebindings"},
			Operations:  []Operation{Create, Update},
		}},
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
					' is one of the cluster\'s own: break-glass grants are never made here, whatever PolicyParams says.'`,
			},
			{
				Name: "grant.subject",
				Expression: fmt.Sprintf(`has(object.subjects) && size(object.subjects) == 1 &&
					object.subjects[0].kind == 'ServiceAccount' &&
					has(object.subjects[0].namespace) && object.subjects[0].namespace == '%s'`, v1alpha1.Namespace),
				Message: fmt.Sprintf("[grant.subject] a debug role is bound only to the portal: exactly one subject, ServiceAccount %s/%s. Request a session through the portal instead of binding a person.",
					v1alpha1.Namespace, v1alpha1.PortalServiceAccount),
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

// GrantShape checks a session grant against the params: its subject is the
// portal, its TTL is within the bounds, its namespace is not protected.
func GrantShape() Policy {
	return Policy{
		Name:        "breakglass-grant-shape",
		Summary:     "Session grants: only the portal, only briefly, never in a protected namespace.",
		Profiles:    Profiles,
		UsesParams:  true,
		SelectLabel: v1alpha1.SessionLabel,
		Rules: []Rule{{
			APIGroups:   []string{"rbac.authorization.k8s.io"},
			APIVersions: []string{"v1"},
			Resources:   []string{"rolebindings"},
			Operations:  []Operation{Create, Update},
		}},
		MatchConditions: []Condition{bindsDebugRole},
		Variables: []Variable{
			{Name: "ttl", Expression: fmt.Sprintf(`%[1]s in object.metadata.labels ? object.metadata.labels[%[1]s] : ''`, q(v1alpha1.TTLLabel))},
			// A malformed TTL is GrantGuard's to refuse, with its own words.
			{Name: "ttlWellFormed", Expression: fmt.Sprintf(`size(variables.ttl) <= 16 && variables.ttl.matches('%s') && variables.ttl != ''`, durationPattern)},
		},
		Validations: []Validation{
			{
				Name:       "grant.namespace",
				Expression: `!(request.namespace in params.spec.protectedNamespaces)`,
				MessageExpression: `'[grant.namespace] namespace ' + request.namespace +
					' is protected: break-glass grants are never made here. Debug the workload in its own namespace.'`,
			},
			{
				Name: "grant.namespace-opt-in",
				Expression: fmt.Sprintf(`!has(params.spec.requireNamespaceOptIn) || !params.spec.requireNamespaceOptIn ||
					(has(namespaceObject.metadata.labels) && %[1]s in namespaceObject.metadata.labels &&
					 namespaceObject.metadata.labels[%[1]s] == 'true')`, q(v1alpha1.NamespaceOptInLabel)),
				MessageExpression: fmt.Sprintf(`'[grant.namespace-opt-in] namespace ' + request.namespace +
					' has not opted in to break-glass grants: a cluster admin labels it %s=true.'`, v1alpha1.NamespaceOptInLabel),
			},
			{
				Name: "grant.portal",
				// GrantGuard refuses any other number of subjects, in its own words.
				Expression: `!has(object.subjects) || size(object.subjects) != 1 ||
					(object.subjects[0].name == params.spec.portal.name && has(object.subjects[0].namespace) &&
					 object.subjects[0].namespace == params.spec.portal.namespace)`,
				MessageExpression: `'[grant.portal] a debug role is bound only to the portal, ServiceAccount ' +
					params.spec.portal.namespace + '/' + params.spec.portal.name + '.'`,
			},
			{
				Name: "grant.ttl",
				Expression: `!variables.ttlWellFormed ||
					(duration(variables.ttl) >= duration(params.spec.grantTTL.min) &&
					 duration(variables.ttl) <= duration(params.spec.grantTTL.max))`,
				MessageExpression: fmt.Sprintf(`'[grant.ttl] a grant lives from ' + params.spec.grantTTL.min + ' to ' +
					params.spec.grantTTL.max + ' (label %s); it asks for ' + variables.ttl + '.'`, v1alpha1.TTLLabel),
			},
		},
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

// planeBindings are the at-rest bindings the chart makes to the plane's own
// accounts, each named for the role it binds: the ClusterRoleBindings, and
// the RoleBindings in the plane's namespace.
var (
	planeClusterBindings   = []string{v1alpha1.PortalRole, v1alpha1.SweeperRole, "breakglass:webhook"}
	planeNamespaceBindings = []string{"breakglass:sweeper-leader-election", "breakglass:webhook"}
)

// planeSubjectExpr is true when a binding names one of the plane's three
// accounts, directly or through the group of the plane's namespace. Other
// ServiceAccounts of that namespace are nobody special.
var planeSubjectExpr = fmt.Sprintf(`has(object.subjects) && object.subjects.exists(s,
	(s.kind == 'ServiceAccount' && has(s.namespace) && s.namespace == '%[1]s' && s.name in ['%[2]s', '%[3]s', '%[4]s']) ||
	(s.kind == 'Group' && s.name == 'system:serviceaccounts:%[1]s'))`,
	v1alpha1.Namespace, v1alpha1.PortalServiceAccount, v1alpha1.SweeperServiceAccount, v1alpha1.WebhookServiceAccount)

// NoStandingPlaneBindings keeps standing rights away from the plane's
// accounts: a binding that names one of them is either a session grant (a
// RoleBinding to a debug role, which GrantGuard and GrantShape hold to
// shape) or one of the chart's own at-rest bindings. Otherwise a namespace
// admin could bind the portal to admin, and the portal would hold, for good,
// what grants give for minutes (a wildcard role even answers yes to the
// process-access check). It reads no params.
func NoStandingPlaneBindings() Policy {
	return Policy{
		Name:            "breakglass-no-standing-plane-bindings",
		Summary:         "The plane's accounts are bound only by session grants and the chart's own at-rest bindings.",
		Profiles:        Profiles,
		Rules:           []Rule{bindingWrites},
		MatchConditions: []Condition{{Name: "names-a-plane-account", Expression: planeSubjectExpr}},
		Validations: []Validation{{
			Name: "grant.no-standing",
			Expression: fmt.Sprintf(`(request.resource.resource == 'rolebindings' && object.roleRef.kind == 'ClusterRole' &&
				object.roleRef.name in %[1]s) ||
				(object.roleRef.name == object.metadata.name &&
				 ((request.resource.resource == 'clusterrolebindings' && object.roleRef.kind == 'ClusterRole' && object.metadata.name in %[2]s) ||
				  (request.resource.resource == 'rolebindings' && request.namespace == '%[4]s' && object.roleRef.kind == 'Role' &&
				   object.metadata.name in %[3]s)))`,
				debugRolesExpr, celList(planeClusterBindings), celList(planeNamespaceBindings), v1alpha1.Namespace),
			Message: fmt.Sprintf("[grant.no-standing] the plane's accounts (%s, %s and %s in %s) hold no standing rights: they are bound only by "+
				"session grants and the chart's own bindings. Request a break-glass session instead.",
				v1alpha1.PortalServiceAccount, v1alpha1.SweeperServiceAccount, v1alpha1.WebhookServiceAccount, v1alpha1.Namespace),
		}},
	}
}
