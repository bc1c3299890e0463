package cluster

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// ProbeGrant is a grant as the portal makes it: a RoleBinding of
// breakglass:debug to the portal, with the session and TTL labels.
func ProbeGrant(session, ttl string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   "breakglass-" + session,
			Labels: map[string]string{v1alpha1.SessionLabel: session, v1alpha1.TTLLabel: ttl},
		},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: v1alpha1.DebugRole},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: v1alpha1.PortalServiceAccount, Namespace: v1alpha1.Namespace}},
	}
}
