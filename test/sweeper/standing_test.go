package sweeper_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestStandingRightsBackstop: bindings that admission let through (made as
// one made before the plane was installed would stand) give the portal
// pods in a namespace. The sweeper's backstop, woken by the RBAC change,
// deletes a binding that names the portal alone (here as a User with its
// user name), audited, with a Warning Event on the portal's account; one
// that reaches it through system:authenticated is found by asking the real
// authorizer, counted (breakglass_portal_standing_rights), named and left
// for an admin, and the count falls to 0 once it is gone; one that names
// the portal beside a person is named, not deleted. A live grant's rights
// are no finding.
func TestStandingRightsBackstop(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "standing")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "standing-test:pods"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}}
	if err := cl.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Client.Delete(context.Background(), role) })
	var log cluster.SyncBuffer
	startSweeper(t, sweeper.Options{StandingEvery: time.Hour, StandingSample: []string{ns}, Audit: audit.NewLog(audit.Event{}, nil, &audit.Writer{W: &log})})
	// Read on its own: the other figures need the sweeper's cache, still starting.
	standing := func() float64 { return gaugeValue("breakglass_portal_standing_rights") }
	cluster.Eventually(t, 20*time.Second, "a first look with nothing standing", func() (bool, error) { return standing() == 0, nil })

	// A live grant gives the portal pods in its namespace: no finding.
	granted := namespace(t, "standing-granted")
	grant(t, granted, "s-live", "30m")

	direct := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "portal-pods", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: v1alpha1.PortalUsername}}}
	cl.CreateUnfenced(t, direct)
	cluster.Eventually(t, 20*time.Second, "the binding naming the portal deleted", func() (bool, error) { return !exists(direct), nil })
	for _, want := range []string{`"kind":"standing-rights"`, "RoleBinding " + ns + "/portal-pods: deleted", `"kind":"revoke"`} {
		cluster.Eventually(t, 20*time.Second, "the audit log saying "+want, func() (bool, error) { return strings.Contains(log.String(), want), nil })
	}
	if strings.Contains(log.String(), "in "+granted) {
		t.Fatalf("a live grant's rights were reported:\n%s", log.String())
	}
	requireEvent(t, "RoleBinding "+ns+"/portal-pods: deleted")
	cluster.Eventually(t, 20*time.Second, "nothing standing once it is deleted", func() (bool, error) { return standing() == 0, nil })

	everyone := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "everyone-pods", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:authenticated"}}}
	cl.CreateUnfenced(t, everyone)
	cluster.Eventually(t, 20*time.Second, "standing rights through a broad group counted", func() (bool, error) { return standing() >= 2, nil })
	requireEvent(t, "the portal may get pods in "+ns)
	requireEvent(t, "RoleBinding "+ns+"/everyone-pods: binds a group every ServiceAccount is in: remove it")
	if !exists(everyone) {
		t.Fatal("the sweeper deleted a binding of system:authenticated, which is the cluster's, not the plane's")
	}
	if err := cl.Client.Delete(ctx, everyone); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 20*time.Second, "nothing standing once an admin removed it", func() (bool, error) { return standing() == 0, nil })

	shared := direct.DeepCopy()
	shared.ObjectMeta = metav1.ObjectMeta{Name: "shared-pods", Namespace: ns}
	shared.Subjects = append(shared.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "User", Name: "bob"})
	cl.CreateUnfenced(t, shared)
	requireEvent(t, "RoleBinding "+ns+"/shared-pods: names a plane account beside others: remove the plane's subject")
	if !exists(shared) {
		t.Fatal("the sweeper deleted a binding that also gives a person their rights")
	}
}

// requireEvent waits for a StandingRights Event on the portal's account that says want.
func requireEvent(t *testing.T, want string) {
	t.Helper()
	cluster.Eventually(t, 20*time.Second, "an Event saying "+want, func() (bool, error) {
		var events corev1.EventList
		if err := cl.Client.List(context.Background(), &events); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "StandingRights" && e.InvolvedObject.Name == v1alpha1.PortalServiceAccount && e.Type == corev1.EventTypeWarning &&
				strings.Contains(e.Message, want) {
				return true, nil
			}
		}
		return false, nil
	})
}
