// Package sessionobjects is what the relay builds for a session at run
// time: its grant, its debug container, its copy of the pod, and what a
// grant makes the portal's (the probes the sweeper and `breakglass check`
// ask about). What the chart installs is the manifests package's; this one
// links none of it.
package sessionobjects

import (
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Grant is a session grant as the portal makes it: a RoleBinding in
// namespace of role to the portal, labelled with its Session and TTL.
func Grant(namespace, name, session, role, ttl string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
			Labels:    map[string]string{v1alpha1.SessionLabel: session, v1alpha1.TTLLabel: ttl},
		},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: v1alpha1.PortalServiceAccount, Namespace: v1alpha1.Namespace}},
	}
}

// Probe is something a stolen portal token would want: the portal may do
// it only in a namespace where a live grant of Role gives it (a process
// grant gives what the plain one does too), or never (Role ""). The
// sweeper's backstop and `breakglass check` ask the real authorizer about
// each, as the portal.
type Probe struct {
	authorizationv1.ResourceAttributes
	Role string
}

// PortalProbes are the Probes, in namespaced form (Namespace left for the
// asker), then the cluster-wide ones.
var PortalProbes = []Probe{
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}, Role: v1alpha1.DebugRole},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods"}, Role: v1alpha1.DebugRole},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Subresource: "ephemeralcontainers"}, Role: v1alpha1.DebugRole},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "attach"}, Role: v1alpha1.DebugRole},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Group: v1alpha1.GroupVersion.Group, Resource: v1alpha1.ProcessAccessResource,
		Verb: v1alpha1.ProcessAccessVerb}, Role: v1alpha1.DebugProcessRole},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "exec"}},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "portforward"}},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Subresource: "log"}},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets"}},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets"}},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "create", Resource: "serviceaccounts", Subresource: "token"}},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "update", Resource: "deployments", Group: "apps"}},
}

// PortalClusterProbes are asked cluster-wide: nothing here is ever the portal's.
var PortalClusterProbes = []Probe{
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets"}},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy"}},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: "cluster-admin"}},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts"}},
	{ResourceAttributes: authorizationv1.ResourceAttributes{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterrolebindings"}},
}

// Allows reports whether a live grant of role makes the probe the portal's.
func (p Probe) Allows(role string) bool {
	return p.Role != "" && (p.Role == role || (role == v1alpha1.DebugProcessRole && p.Role == v1alpha1.DebugRole))
}

// String says what the probe asks, e.g. "create pods/exec".
func (p Probe) String() string {
	r := p.Resource
	if p.Group != "" {
		r += "." + p.Group
	}
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	if p.Name != "" {
		r += " " + p.Name
	}
	return p.Verb + " " + r
}
