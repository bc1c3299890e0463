package cluster

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
)

// DebugImage is the one debug image the test clusters' params allow: a
// digest no registry serves, for the virtual node, which pulls nothing.
const DebugImage = "registry.example/breakglass/debug@sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"

// ProbeGrant is a grant as the portal makes it: a RoleBinding of
// breakglass:debug to the portal, with the session and TTL labels. The
// caller sets its namespace.
func ProbeGrant(session, ttl string) *rbacv1.RoleBinding {
	return sessionobjects.Grant("", v1alpha1.GrantName(session), session, v1alpha1.DebugRole, ttl)
}
