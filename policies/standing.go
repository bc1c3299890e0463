package policies

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// RBAC applies a binding's subject to a request by the user's name and
// groups, however the subject is written (appliesTo in
// k8s.io/kubernetes/pkg/registry/rbac/validation/rule.go): a User subject by
// its name alone, so one named like a ServiceAccount's user name is that
// ServiceAccount; a ServiceAccount subject by name and namespace, an empty
// namespace being the RoleBinding's own (a ClusterRoleBinding's must be
// set); a Group by the groups the authenticator gave the user, for a
// ServiceAccount token system:serviceaccounts, system:serviceaccounts:<ns>
// and system:authenticated (k8s.io/apiserver/pkg/authentication/serviceaccount
// MakeGroupNames, and the authenticated group the union authenticator adds).
// These are every spelling of a plane account a binding can hold.

// planeAccounts are the plane's ServiceAccounts, each with the user name
// the API server gives it.
var planeAccounts = []struct{ sa, user string }{
	{v1alpha1.PortalServiceAccount, v1alpha1.PortalUsername},
	{v1alpha1.SweeperServiceAccount, v1alpha1.SweeperUsername},
	{v1alpha1.WebhookServiceAccount, v1alpha1.WebhookUsername},
}

// planeNamespaceGroup is the group of every ServiceAccount in the plane's namespace.
const planeNamespaceGroup = "system:serviceaccounts:" + v1alpha1.Namespace

// broadGroups hold every ServiceAccount, the plane's among them, and are
// the cluster's own: its bootstrap binds them to discovery roles.
var broadGroups = []string{"system:serviceaccounts", "system:authenticated"}

// bootstrapDiscoveryRoles are the ClusterRoles the API server's bootstrap
// binds the broad groups to (ClusterRoleBindings() in
// k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go):
// discovery, the user's own access reviews, version and health, and the
// service-account issuer's keys. A broad group is bound to these, or to
// nothing the plane's accounts could use.
var bootstrapDiscoveryRoles = []string{"system:discovery", "system:basic-user", "system:public-info-viewer",
	"system:service-account-issuer-discovery", "system:cluster-trust-bundle-discovery"}

// subjectNamespaceExpr is the namespace RBAC reads a ServiceAccount subject
// s in: its own, or, left empty, the RoleBinding's.
const subjectNamespaceExpr = `(dyn(s).?namespace.orValue('') != '' ? dyn(s).namespace :
	(request.resource.resource == 'rolebindings' ? request.namespace : ''))`

// namesPlaneAccount is true when RBAC would apply the subject s to the plane
// account sa with user name user.
func namesPlaneAccount(sa, user string) string {
	return fmt.Sprintf(`((s.kind == 'User' && s.name == '%s') ||
	 (s.kind == 'ServiceAccount' && s.name == '%s' && %s == '%s'))`, user, sa, subjectNamespaceExpr, v1alpha1.Namespace)
}

// planeSubjectExpr is true for a subject s that RBAC applies to one of the
// plane's accounts by name, or through the group of the plane's namespace.
// Other ServiceAccounts of that namespace are nobody special.
var planeSubjectExpr = func() string {
	var parts []string
	for _, a := range planeAccounts {
		parts = append(parts, namesPlaneAccount(a.sa, a.user))
	}
	parts = append(parts, fmt.Sprintf(`(s.kind == 'Group' && s.name == '%s')`, planeNamespaceGroup))
	return "(" + strings.Join(parts, " ||\n\t") + ")"
}()

// broadSubjectExpr is true for a subject s naming a broad group.
var broadSubjectExpr = fmt.Sprintf(`(s.kind == 'Group' && s.name in %s)`, celList(broadGroups))

// chartBinding is one of the chart's at-rest bindings of a plane account
// (manifests: RoleBindings, SweeperLeaderElection, RelayPresence, WebhookRoles), each named
// for the role it binds; a manifests test holds this table to them.
type chartBinding struct {
	resource, namespace, name, roleKind, sa string
}

var chartBindings = []chartBinding{
	{"clusterrolebindings", "", v1alpha1.PortalRole, "ClusterRole", v1alpha1.PortalServiceAccount},
	{"clusterrolebindings", "", v1alpha1.SweeperRole, "ClusterRole", v1alpha1.SweeperServiceAccount},
	{"clusterrolebindings", "", WebhookRoleName, "ClusterRole", v1alpha1.WebhookServiceAccount},
	{"rolebindings", v1alpha1.Namespace, SweeperLeaderElectionName, "Role", v1alpha1.SweeperServiceAccount},
	{"rolebindings", v1alpha1.Namespace, RelayPresenceName, "Role", v1alpha1.PortalServiceAccount},
	{"rolebindings", v1alpha1.Namespace, WebhookRoleName, "Role", v1alpha1.WebhookServiceAccount},
}

// Names of the plane's at-rest roles besides the ClusterRoles in api/v1alpha1.
const (
	// WebhookRoleName is the webhook's ClusterRole and Role (and their bindings).
	WebhookRoleName = "breakglass:webhook"
	// SweeperLeaderElectionName is the sweeper's Role in the plane's
	// namespace for its Lease (and its binding).
	SweeperLeaderElectionName = "breakglass:sweeper-leader-election"
	// RelayPresenceName is the portal's Role in the plane's namespace for
	// the relay replicas' presence Leases (and its binding).
	RelayPresenceName = "breakglass:relay-presence"
)

// chartBindingExpr is true when obj (object, or oldObject for a delete) is
// exactly one of the chart's own bindings: its name, the role of that name,
// and its one account as the only subject.
func chartBindingExpr(obj string) string {
	var rows []string
	for _, b := range chartBindings {
		ns := ""
		if b.namespace != "" {
			ns = fmt.Sprintf(" && request.namespace == '%s'", b.namespace)
		}
		rows = append(rows, fmt.Sprintf(`(request.resource.resource == '%[1]s'%[2]s && %[7]s.metadata.name == '%[3]s' &&
		  %[7]s.roleRef.kind == '%[4]s' && %[7]s.roleRef.name == '%[3]s' &&
		  size(%[7]s.subjects) == 1 && %[7]s.subjects[0].kind == 'ServiceAccount' &&
		  %[7]s.subjects[0].name == '%[5]s' && dyn(%[7]s.subjects[0]).?namespace.orValue('') == '%[6]s')`,
			b.resource, ns, b.name, b.roleKind, b.sa, v1alpha1.Namespace, obj))
	}
	return "(" + strings.Join(rows, " ||\n\t") + ")"
}

// isChartBindingExpr is chartBindingExpr of the object written.
var isChartBindingExpr = chartBindingExpr("object")

// NoStandingPlaneBindings keeps standing rights away from the plane's
// accounts, in every spelling RBAC applies to them: a binding that names one
// of them (as a ServiceAccount with or without its namespace, as a User by
// its user name, or through the group of the plane's namespace) is either a
// session grant (a RoleBinding to a debug role, which GrantGuard holds to
// one portal subject) or exactly one of the chart's own at-rest bindings.
// The broad groups every ServiceAccount is in are bound only to the
// bootstrap's discovery roles, in a binding created or given new subjects
// from now on; those made before the plane was installed are the
// sweeper's backstop to measure (docs/threat-model.md). Otherwise a
// namespace admin could bind the portal to admin, and the portal would
// hold, for good, what grants give for minutes (a wildcard role even
// answers yes to the process-access check).
func NoStandingPlaneBindings() Policy {
	return Policy{
		Name:     "breakglass-no-standing-plane-bindings",
		Summary:  "The plane's accounts, however a binding spells them, are bound only by session grants and the chart's own at-rest bindings.",
		Profiles: Profiles,
		Rules:    []Rule{bindingWrites},
		MatchConditions: []Condition{{
			Name:       "names-a-plane-account",
			Expression: fmt.Sprintf(`has(object.subjects) && object.subjects.exists(s, %s || %s)`, planeSubjectExpr, broadSubjectExpr),
		}},
		Variables: []Variable{
			{Name: "direct", Expression: fmt.Sprintf(`object.subjects.exists(s, %s)`, planeSubjectExpr)},
			{Name: "broad", Expression: fmt.Sprintf(`object.subjects.exists(s, %s)`, broadSubjectExpr)},
			{Name: "oldSubjects", Expression: `request.operation == 'UPDATE' && has(oldObject.subjects) ? oldObject.subjects : []`},
		},
		Validations: []Validation{
			{
				Name: "grant.no-standing",
				Expression: fmt.Sprintf(`!variables.direct ||
				(request.resource.resource == 'rolebindings' && object.roleRef.kind == 'ClusterRole' && object.roleRef.name in %s) ||
				%s`, debugRolesExpr, isChartBindingExpr),
				Message: fmt.Sprintf("[grant.no-standing] the plane's accounts (%s, %s and %s in %s) hold no standing rights: they are bound only by "+
					"session grants and the chart's own bindings, however a binding names them (a ServiceAccount with or without its namespace, "+
					"a User named system:serviceaccount:..., the group %s). Request a break-glass session instead.",
					v1alpha1.PortalServiceAccount, v1alpha1.SweeperServiceAccount, v1alpha1.WebhookServiceAccount, v1alpha1.Namespace, planeNamespaceGroup),
			},
			{
				Name: "grant.no-broad-groups",
				Expression: fmt.Sprintf(`!variables.broad ||
				(request.operation == 'UPDATE' && object.subjects.all(s, !%s || s in variables.oldSubjects)) ||
				(object.roleRef.kind == 'ClusterRole' && object.roleRef.name in %s)`, broadSubjectExpr, celList(bootstrapDiscoveryRoles)),
				Message: fmt.Sprintf("[grant.no-broad-groups] %s take in every ServiceAccount, the break-glass plane's among them, which hold no "+
					"standing rights: bind those groups only to the discovery roles (%s), and bind people or your own ServiceAccounts instead.",
					strings.Join(broadGroups, " and "), strings.Join(bootstrapDiscoveryRoles, ", ")),
			},
		},
	}
}

// NamesPlaneAccount is the Go twin of planeSubjectExpr, for the sweeper's
// backstop: whether RBAC applies subject s, of a binding in namespace ns
// ("" for a ClusterRoleBinding), to one of the plane's accounts by name or
// through the group of the plane's namespace.
func NamesPlaneAccount(s rbacv1.Subject, ns string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return slices.ContainsFunc(planeAccounts, func(a struct{ sa, user string }) bool { return a.user == s.Name })
	case rbacv1.GroupKind:
		return s.Name == planeNamespaceGroup
	case rbacv1.ServiceAccountKind:
		sns := s.Namespace
		if sns == "" {
			sns = ns
		}
		return sns == v1alpha1.Namespace && slices.ContainsFunc(planeAccounts, func(a struct{ sa, user string }) bool { return a.sa == s.Name })
	}
	return false
}

// IsBootstrapDiscoveryRole is whether a binding's role is one of the
// discovery roles the bootstrap binds the broad groups to.
func IsBootstrapDiscoveryRole(role rbacv1.RoleRef) bool {
	return role.Kind == "ClusterRole" && slices.Contains(bootstrapDiscoveryRoles, role.Name)
}

// IsBroadGroup is whether s is one of the broad groups every ServiceAccount is in.
func IsBroadGroup(s rbacv1.Subject) bool {
	return s.Kind == rbacv1.GroupKind && slices.Contains(broadGroups, s.Name)
}

// IsChartBinding is the Go twin of isChartBindingExpr: whether the binding
// (a RoleBinding in ns, or a ClusterRoleBinding when ns is "") is exactly
// one of the chart's own at-rest bindings.
func IsChartBinding(ns, name string, role rbacv1.RoleRef, subjects []rbacv1.Subject) bool {
	resource := "clusterrolebindings"
	if ns != "" {
		resource = "rolebindings"
	}
	for _, b := range chartBindings {
		if b.resource == resource && b.namespace == ns && b.name == name && role.Kind == b.roleKind && role.Name == b.name &&
			len(subjects) == 1 && subjects[0].Kind == rbacv1.ServiceAccountKind && subjects[0].Name == b.sa && subjects[0].Namespace == v1alpha1.Namespace {
			return true
		}
	}
	return false
}
