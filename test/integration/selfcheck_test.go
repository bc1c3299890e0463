package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/internal/selfcheck"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestSelfCheck: what `helm test` runs, as the portal. It passes on the
// installed plane, and fails, saying why, when something standing grants
// the portal what a session grant would.
func TestSelfCheck(t *testing.T) {
	eachProfile(t, func(t *testing.T, p policies.Profile, c *cluster.Cluster) {
		ctx := context.Background()
		ns := c.Namespace(t, "selfcheck-"+string(p))
		portal, err := c.Portal()
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := selfcheck.Run(ctx, portal.Kube, ns, &out); err != nil {
			t.Fatalf("the installed plane fails its check: %v\n%s", err, out.String())
		}
		if !strings.Contains(out.String(), "a two-hour grant in "+ns+" is refused") || !strings.Contains(out.String(), "[grant.ttl]") {
			t.Fatalf("the check's report: %s", out.String())
		}
		// A standing binding an admin left behind, to everyone signed in, made
		// before the plane was installed (the policies refuse new ones): the
		// check must say so.
		standing := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "left-behind", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:authenticated"}}}
		c.CreateUnfenced(t, standing)
		if err := portal.WaitAllowed(ctx, ns, "create", "pods", "exec"); err != nil {
			t.Fatal(err)
		}
		err = selfcheck.Run(ctx, portal.Kube, ns, &out)
		if err == nil || !strings.Contains(err.Error(), "without a grant: something standing grants it") {
			t.Fatalf("with a standing binding the check says %v", err)
		}
	})
}
