package integration

// The API server reports the first policy that refuses, and the order among
// policies is not fixed: where two policies refuse the same request, the test
// wants the words both say.

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/vap"
)

// TestGrantShape makes grants on the real API server, as the portal and as
// a cluster admin, and holds each refusal to the words it should say.
func TestGrantShape(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "grants")
		portal := mustUser(t)(c.Portal())
		admin := mustUser(t)(c.As("alice", "system:masters"))
		for _, tc := range []struct {
			name   string
			as     *cluster.User
			ns     string
			mutate func(*rbacv1.RoleBinding)
			want   string // "" means admitted
		}{
			{name: "the portal's well-formed grant", as: portal},
			{name: "the process role", as: portal, mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Name = v1alpha1.DebugProcessRole }},
			// RBAC's own escalation check refuses before admission: the portal holds neither bind on cluster-admin nor its rules.
			{name: "escalation: bind cluster-admin", as: portal, mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Name = "cluster-admin" },
				want: "is attempting to grant RBAC permissions not currently held"},
			// admin has no rules in a control plane without the aggregation controller, so RBAC lets it through: the policy does not.
			{name: "escalation: bind admin", as: portal, mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Name = "admin" },
				want: "[portal.binds-only-debug-roles] | [grant.no-standing]"},
			{name: "subject another user", as: portal, mutate: func(rb *rbacv1.RoleBinding) {
				rb.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}
			}, want: "a debug role is bound only to the portal"},
			{name: "a cluster admin binds a debug role to themself", as: admin, mutate: func(rb *rbacv1.RoleBinding) {
				rb.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}
			}, want: "a debug role is bound only to the portal"},
			{name: "TTL 2h", as: portal, mutate: ttl("2h"), want: "[grant.ttl] a grant lives from 15m to 75m (label cleanup.kyverno.io/ttl); it asks for 2h."},
			{name: "TTL 5m", as: portal, mutate: ttl("5m"), want: "[grant.ttl]"},
			{name: "TTL missing", as: portal, mutate: func(rb *rbacv1.RoleBinding) { delete(rb.Labels, v1alpha1.TTLLabel) },
				want: "[grant.ttl-format] a grant needs the label cleanup.kyverno.io/ttl with a Go duration such as 30m; it has none."},
			{name: "TTL garbage", as: portal, mutate: ttl("soon"), want: "[grant.ttl-format]"},
			{name: "a cluster admin's 2h grant", as: admin, mutate: ttl("2h"), want: "[grant.ttl]"},
			{name: "no session label", as: portal, mutate: func(rb *rbacv1.RoleBinding) { delete(rb.Labels, v1alpha1.SessionLabel) },
				want: "[grant.session-label]"},
			{name: "protected namespace", as: portal, ns: "kube-system", want: "namespace kube-system is"},
			{name: "the plane's namespace", as: portal, ns: v1alpha1.Namespace, want: "namespace breakglass-system is"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rb := cluster.ProbeGrant("s-grant", "30m")
				rb.Namespace = ns
				if tc.ns != "" {
					rb.Namespace = tc.ns
				}
				if tc.mutate != nil {
					tc.mutate(rb)
				}
				err := tc.as.Client.Create(testContext(t), rb, dryRun)
				if tc.want == "" {
					wantAdmitted(t, err)
					return
				}
				wantDeniedByOneOf(t, err, strings.Split(tc.want, " | ")...)
			})
		}

		t.Run("no ClusterRoleBinding to a debug role", func(t *testing.T) {
			crb := &rbacv1.ClusterRoleBinding{}
			crb.Name = "debug-everywhere"
			crb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: v1alpha1.DebugRole}
			crb.Subjects = []rbacv1.Subject{{Kind: "ServiceAccount", Name: v1alpha1.PortalServiceAccount, Namespace: v1alpha1.Namespace}}
			wantDeniedByOneOf(t, admin.Client.Create(testContext(t), crb, dryRun), "[grant.cluster-wide]", "[grant.no-standing]")
		})

		t.Run("the TTL of a live grant never changes", func(t *testing.T) {
			rb := grant(t, c, ns, "s-ttl", v1alpha1.DebugRole)
			rb.Labels[v1alpha1.TTLLabel] = "75m"
			wantDenied(t, admin.Client.Update(testContext(t), rb), "[grant.ttl-immutable]")
		})
	})
}

func ttl(d string) func(*rbacv1.RoleBinding) {
	return func(rb *rbacv1.RoleBinding) { rb.Labels[v1alpha1.TTLLabel] = d }
}

// TestProtectedNamespaces installs the chart's protected namespaces and
// opt-in as the chart renders them (bindings fixed at install): a protected
// namespace refuses grants, the system namespaces refuse them whatever the
// values say, and the opt-in mode admits grants only into namespaces
// labelled for them. The bindings are removed after.
func TestProtectedNamespaces(t *testing.T) {
	eachProfile(t, func(t *testing.T, profile policies.Profile, c *cluster.Cluster) {
		ctx := testContext(t)
		portal := mustUser(t)(c.Portal())
		payments := namespace(t, c, "payments")
		shop := namespace(t, c, "shop-optin")
		apply := func(v vap.ChartValues) []client.Object {
			objs, err := manifests.ChartBindings(profile, v)
			if err != nil {
				t.Fatal(err)
			}
			var out []client.Object
			for _, o := range objs {
				obj := o.(client.Object)
				wantAdmitted(t, c.Apply(ctx, obj))
				out = append(out, obj)
			}
			t.Cleanup(func() {
				for _, o := range out {
					if err := c.Client.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
						t.Errorf("removing %s: %v", o.GetName(), err)
					}
				}
				// The next test must see them gone before it runs.
				waitRefusal(t, portal, payments, "")
			})
			return out
		}
		apply(vap.ChartValues{ProtectedNamespaces: []string{payments}})
		waitRefusal(t, portal, payments, "[grant.namespace] namespace "+payments+" is protected")
		waitRefusal(t, portal, "kube-system", "[grant.system-namespace] namespace kube-system is one of the cluster's own")
		waitRefusal(t, portal, shop, "")

		apply(vap.ChartValues{ProtectedNamespaces: []string{payments}, RequireNamespaceOptIn: true})
		waitRefusal(t, portal, shop, "[grant.namespace-opt-in] namespace "+shop+" has not opted in")

		ns := &corev1.Namespace{}
		wantAdmitted(t, c.Client.Get(ctx, client.ObjectKey{Name: shop}, ns))
		ns.Labels[v1alpha1.NamespaceOptInLabel] = "true"
		wantAdmitted(t, c.Client.Update(ctx, ns))
		waitRefusal(t, portal, shop, "")
		// A protected namespace stays protected, labelled or not.
		wantAdmitted(t, c.Client.Get(ctx, client.ObjectKey{Name: payments}, ns))
		ns.Labels[v1alpha1.NamespaceOptInLabel] = "true"
		wantAdmitted(t, c.Client.Update(ctx, ns))
		waitRefusal(t, portal, payments, "[grant.namespace]")
	})
}

// waitRefusal waits (the API server reads params and namespaces from its
// informers, a moment behind) until a dry-run grant in ns by u is refused
// saying want, or admitted when want is "".
func waitRefusal(t *testing.T, u *cluster.User, ns, want string) {
	t.Helper()
	var last error
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		rb := cluster.ProbeGrant("s-protected", "30m")
		rb.Namespace = ns
		last = u.Client.Create(context.Background(), rb, dryRun)
		if want == "" && last == nil || want != "" && last != nil && strings.Contains(last.Error(), want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("a grant in %s: want %q, got %v", ns, want, last)
}

// TestNoStandingPlaneBindings binds the plane's accounts as a namespace
// admin and a cluster admin would: nothing but grants and the chart's own
// bindings, which an upgrade applies again, are admitted.
func TestNoStandingPlaneBindings(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ctx := testContext(t)
		ns := namespace(t, c, "standing")
		admin := mustUser(t)(c.As("alice", "system:masters"))
		standing := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "portal-admin", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: v1alpha1.PortalServiceAccount, Namespace: v1alpha1.Namespace}},
		}
		wantDenied(t, admin.Client.Create(ctx, standing, dryRun), "[grant.no-standing]")
		group := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "plane-view"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + v1alpha1.Namespace}},
		}
		wantDenied(t, admin.Client.Create(ctx, group, dryRun), "[grant.no-standing]")
		// Every other spelling RBAC applies to the portal, and the broad groups.
		for _, tc := range []struct {
			name, ns, want string
			subject        rbacv1.Subject
		}{
			{"a User named like the portal", ns, "[grant.no-standing]",
				rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: v1alpha1.PortalUsername}},
			{"the portal without its namespace", v1alpha1.Namespace, "[grant.no-standing]",
				rbacv1.Subject{Kind: "ServiceAccount", Name: v1alpha1.PortalServiceAccount}},
			{"every authenticated user", ns, "[grant.no-broad-groups]",
				rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:authenticated"}},
			{"every ServiceAccount", ns, "[grant.no-broad-groups]",
				rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts"}},
			{"an app's own account of the same name", ns, "",
				rbacv1.Subject{Kind: "ServiceAccount", Name: v1alpha1.PortalServiceAccount}},
		} {
			rb := standing.DeepCopy()
			rb.Namespace, rb.Subjects = tc.ns, []rbacv1.Subject{tc.subject}
			if tc.want == "" {
				wantAdmitted(t, admin.Client.Create(ctx, rb, dryRun))
			} else {
				wantDenied(t, admin.Client.Create(ctx, rb, dryRun), tc.want)
			}
		}

		// Every at-rest binding the chart ships, applied again as an upgrade does.
		objs, err := manifests.Generated(policies.Flight)
		if err != nil {
			t.Fatal(err)
		}
		applied := 0
		for _, o := range append(objs, manifests.WebhookRoles()...) {
			switch b := o.(type) {
			case *rbacv1.ClusterRoleBinding, *rbacv1.RoleBinding:
				obj := b.(client.Object)
				cur := obj.DeepCopyObject().(client.Object)
				if err := c.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
					// The webhook's bindings are installed with the webhook only.
					wantAdmitted(t, admin.Client.Create(ctx, obj, dryRun))
				} else {
					obj.SetResourceVersion(cur.GetResourceVersion())
					wantAdmitted(t, admin.Client.Update(ctx, obj, dryRun))
				}
				applied++
			}
		}
		if applied < 5 {
			t.Fatalf("applied %d of the chart's bindings, want all 5", applied)
		}
	})
}
