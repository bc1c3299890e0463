package integration

import (
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestPortalHoldsNothingAtRest asks the real authorizer (SubjectAccessReview)
// what the portal may do before any grant: bind the two debug roles and
// manage grants and Sessions, and nothing on pods.
func TestPortalHoldsNothingAtRest(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "at-rest")
		portal := "system:serviceaccount:" + v1alpha1.Namespace + ":" + v1alpha1.PortalServiceAccount
		for _, tc := range []struct {
			name string
			attr authorizationv1.ResourceAttributes
			want bool
		}{
			{"attach", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "attach"}, false},
			{"attach over WebSocket", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods", Subresource: "attach"}, false},
			{"exec", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec"}, false},
			{"add an ephemeral container", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Resource: "pods", Subresource: "ephemeralcontainers"}, false},
			{"delete a pod", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "delete", Resource: "pods"}, false},
			{"create a pod", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}, false},
			{"read a pod", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods"}, false},
			{"read a secret", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets"}, false},
			{"process access", authorizationv1.ResourceAttributes{Namespace: ns, Verb: v1alpha1.ProcessAccessVerb, Group: v1alpha1.GroupVersion.Group, Resource: v1alpha1.ProcessAccessResource}, false},
			{"bind cluster-admin", authorizationv1.ResourceAttributes{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "cluster-admin"}, false},
			{"create a grant", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}, true},
			{"bind breakglass:debug", authorizationv1.ResourceAttributes{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: v1alpha1.DebugRole}, true},
			{"bind breakglass:debug-process", authorizationv1.ResourceAttributes{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: v1alpha1.DebugProcessRole}, true},
			{"create a Session", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: v1alpha1.GroupVersion.Group, Resource: "sessions"}, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				attr := tc.attr
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User:               portal,
					Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + v1alpha1.Namespace, "system:authenticated"},
					ResourceAttributes: &attr,
				}}
				got, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(testContext(t), sar, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got.Status.Allowed != tc.want {
					t.Errorf("allowed = %v, want %v (%s)", got.Status.Allowed, tc.want, got.Status.Reason)
				}
			})
		}
	})
}
