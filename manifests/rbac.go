// Package manifests assembles every object of the plane, in the order they
// apply to an empty cluster: the roles and identities here, the admission
// policies from the vap package.
package manifests

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
)

var partOf = map[string]string{"app.kubernetes.io/part-of": "breakglass"}

func meta(name, namespace string) metav1.ObjectMeta {
	labels := map[string]string{}
	for k, v := range partOf {
		labels[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
}

// debugRules are what a session grant lets the portal do in one namespace,
// and only what the relay does: read the target pod, add a debug container,
// attach to it, create a copy, and recycle the pod at the end. No list or
// watch, no logs, no exec. The admission policies hold each to shape.
var debugRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "create", "delete"}},
	// The relay PUTs the subresource; kubectl debug PATCHes it. Both reach
	// the same admission checks as UPDATE, so patch adds no power.
	{APIGroups: []string{""}, Resources: []string{"pods/ephemeralcontainers"}, Verbs: []string{"patch", "update"}},
	// attach is a POST (SPDY) or a GET (WebSocket) on the subresource.
	{APIGroups: []string{""}, Resources: []string{"pods/attach"}, Verbs: []string{"create", "get"}},
}

// DebugRoles returns breakglass:debug and breakglass:debug-process. The
// process role alone holds the custom verb the policies ask the authorizer
// about before a debug container may see an app's processes.
func DebugRoles() []*rbacv1.ClusterRole {
	process := append(append([]rbacv1.PolicyRule(nil), debugRules...), rbacv1.PolicyRule{
		APIGroups: []string{v1alpha1.GroupVersion.Group},
		Resources: []string{v1alpha1.ProcessAccessResource},
		Verbs:     []string{v1alpha1.ProcessAccessVerb},
	})
	return []*rbacv1.ClusterRole{
		clusterRole(v1alpha1.DebugRole, debugRules),
		clusterRole(v1alpha1.DebugProcessRole, process),
	}
}

// PortalRole is the portal's at-rest role: it may bind itself one of the
// two debug roles (bind by resourceNames, nothing else), manage those
// bindings and the Sessions, and record Events. Nothing on pods.
func PortalRole() *rbacv1.ClusterRole {
	return clusterRole(v1alpha1.PortalRole, []rbacv1.PolicyRule{
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"},
			ResourceNames: []string{v1alpha1.DebugRole, v1alpha1.DebugProcessRole}},
		// delete takes back a request whose status could not be written; the
		// breakglass-session-delete policy allows the portal nothing more.
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"sessions"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"sessions/status"}, Verbs: []string{"get", "update", "patch"}},
		// The relay creates one Event per step, each with its own name, and
		// never patches one; the breakglass-plane-events policies hold it to
		// Events about Sessions.
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	})
}

// SweeperRole lets the sweeper find and delete expired grants, finish
// abandoned Sessions and recycle debugged pods; the delete-scope policy
// keeps its deletes to those. It records an Event on each Session it moves,
// as the relay does. Its backstop asks the authorizer what the portal may
// do (subjectaccessreviews), watches the cluster's bindings and roles for
// changes, and deletes a binding that names a plane account outright (the
// delete-scope policy holds it to those); its drift backstop reads the
// plane's admission policies and their bindings.
func SweeperRole() *rbacv1.ClusterRole {
	return clusterRole(v1alpha1.SweeperRole, []rbacv1.PolicyRule{
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings", "clusterrolebindings"}, Verbs: []string{"get", "list", "watch", "delete"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "clusterroles"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		// Its drift backstop compares the plane's policies and bindings
		// with what the chart rendered.
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
			Verbs: []string{"list", "watch"}},
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"sessions"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"sessions/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "delete"}},
		// One Event per step it takes on a Session, as the relay records its
		// own; the breakglass-plane-events policies hold it to Events about
		// Sessions (and its Lease).
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	})
}

func clusterRole(name string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: meta(name, ""),
		Rules:      rules,
	}
}

// ServiceAccounts returns the plane's identities in its namespace.
func ServiceAccounts() []*corev1.ServiceAccount {
	var out []*corev1.ServiceAccount
	for _, name := range []string{v1alpha1.PortalServiceAccount, v1alpha1.SweeperServiceAccount, v1alpha1.WebhookServiceAccount} {
		out = append(out, &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta(name, v1alpha1.Namespace),
		})
	}
	return out
}

// RelayPresence lets the portal (each relay replica) hold its presence
// Lease in the plane's namespace, and read the others': it creates and
// renews its own, watches them all, and deletes one a replica stopped
// renewing (relay/live/presence.go). create and list cannot be limited by
// name; the breakglass-sweeper-lease policy keeps the portal off the
// sweeper's Lease. A Lease says only which replica is alive: whoever may
// write it can make sessions move between replicas, never reach a pod.
func RelayPresence() (*rbacv1.Role, *rbacv1.RoleBinding) {
	return planeRole(policies.RelayPresenceName, v1alpha1.PortalServiceAccount, []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
	})
}

// SweeperLeaderElection lets the sweeper hold its leader-election lease in
// the plane's namespace, and nowhere else: client-go's lease lock gets,
// creates and updates it by name (never lists, watches or patches), and
// records an Event on it, which the event recorder may later patch. create
// cannot be limited by name; the breakglass-sweeper-lease policy holds the
// sweeper to its one Lease, and everyone else away from it.
func SweeperLeaderElection() (*rbacv1.Role, *rbacv1.RoleBinding) {
	return planeRole(policies.SweeperLeaderElectionName, v1alpha1.SweeperServiceAccount, []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update"},
			ResourceNames: []string{policies.SweeperLeaseName}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	})
}

// planeRole is a Role of the plane's namespace and its binding to one of
// the plane's ServiceAccounts, both named name.
func planeRole(name, sa string, rules []rbacv1.PolicyRule) (*rbacv1.Role, *rbacv1.RoleBinding) {
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: meta(name, v1alpha1.Namespace),
		Rules:      rules,
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: meta(name, v1alpha1.Namespace),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: v1alpha1.Namespace}},
	}
	return role, binding
}

// RoleBindings binds the portal and the sweeper to their at-rest roles.
func RoleBindings() []*rbacv1.ClusterRoleBinding {
	bind := func(role, sa string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: meta(role, ""),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: v1alpha1.Namespace}},
		}
	}
	return []*rbacv1.ClusterRoleBinding{
		bind(v1alpha1.PortalRole, v1alpha1.PortalServiceAccount),
		bind(v1alpha1.SweeperRole, v1alpha1.SweeperServiceAccount),
	}
}
