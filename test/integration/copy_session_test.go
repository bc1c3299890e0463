package integration

import (
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

func session(ns, name, duration string) *v1alpha1.Session {
	d, _ := time.ParseDuration(duration)
	return sessiontest.Make(ns, name).Duration(d).Obj()
}

// TestSessionRules writes Sessions as the portal, the sweeper, an app team
// whose namespace Role may write Sessions and their status, and a cluster
// admin: only the portal makes and decides them, each part of the status is
// written once, and the phase only moves forward.
func TestSessionRules(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "sessions")
		portal := mustUser(t)(c.Portal())
		sweeper := mustUser(t)(c.Sweeper())
		admin := mustUser(t)(c.As("alice", "system:masters"))
		team := appTeam(t, c, ns)

		wantDenied(t, portal.Client.Create(testContext(t), session(ns, "too-long", "2h")), "[session.duration] a session lasts from 15m to 75m; this one asks for 2h0m0s.")
		wantDenied(t, portal.Client.Create(testContext(t), session(ns, "too-short", "5m")), "[session.duration]")
		wantDenied(t, team.Client.Create(testContext(t), session(ns, "by-kubectl", "30m")), "[session.portal-creates]")
		wantDenied(t, admin.Client.Create(testContext(t), session(ns, "by-admin", "30m")), "[session.portal-creates]")

		s := session(ns, "s1", "30m")
		wantAdmitted(t, portal.Client.Create(testContext(t), s))
		s.Status.Phase = v1alpha1.PhasePending
		wantAdmitted(t, portal.Client.Status().Update(testContext(t), s))

		approved := func(by string, process bool) *v1alpha1.Session {
			a := s.DeepCopy()
			a.Status.Phase = v1alpha1.PhaseApproved
			a.Status.Approval = &v1alpha1.Approval{By: by, At: metav1.Now(), Mode: v1alpha1.ModeLive, ProcessAccess: process}
			return a
		}
		t.Run("the spec never changes", func(t *testing.T) {
			edited := s.DeepCopy()
			edited.Spec.Duration = metav1.Duration{Duration: 75 * time.Minute}
			wantDenied(t, admin.Client.Update(testContext(t), edited), "[session.spec-immutable]")
		})
		t.Run("the requester approves, written straight to the Session", func(t *testing.T) {
			wantDenied(t, admin.Client.Status().Update(testContext(t), approved("alice", false)), "[session.status-writers]")
		})
		t.Run("the requester approves, through a portal that forgot to check", func(t *testing.T) {
			wantDenied(t, portal.Client.Status().Update(testContext(t), approved("alice", false)), "[session.self-approval]")
		})
		t.Run("an approval for more than was asked", func(t *testing.T) {
			wantDenied(t, portal.Client.Status().Update(testContext(t), approved("bob", true)), "[session.approval-matches]")
		})
		t.Run("an app team approves with its Role on sessions/status", func(t *testing.T) {
			wantDenied(t, team.Client.Status().Update(testContext(t), approved("bob", false)), "[session.status-writers]")
		})
		t.Run("a cluster admin approves", func(t *testing.T) {
			wantDenied(t, admin.Client.Status().Update(testContext(t), approved("bob", false)), "[session.status-writers]")
		})
		t.Run("the sweeper approves", func(t *testing.T) {
			wantDenied(t, sweeper.Client.Status().Update(testContext(t), approved("bob", false)), "[session.portal-decides]")
		})
		t.Run("an app team labels a Session", func(t *testing.T) {
			labelled := s.DeepCopy()
			labelled.Labels = map[string]string{"incident": "inc-42"}
			wantAdmitted(t, team.Client.Update(testContext(t), labelled))
			s.ResourceVersion = labelled.ResourceVersion
			s.Labels = labelled.Labels
		})
		ok := approved("bob", false)
		t.Run("another person approves, through the portal", func(t *testing.T) {
			wantAdmitted(t, portal.Client.Status().Update(testContext(t), ok))
		})
		t.Run("the approval rewritten to give process access", func(t *testing.T) {
			rewritten := ok.DeepCopy()
			rewritten.Status.Approval.By = "carol"
			wantDenied(t, portal.Client.Status().Update(testContext(t), rewritten), "[session.write-once]")
		})
		t.Run("denied after the approval", func(t *testing.T) {
			denied := ok.DeepCopy()
			denied.Status.Phase = v1alpha1.PhaseDenied
			denied.Status.Denial = &v1alpha1.Denial{By: "carol", At: metav1.Now()}
			wantDenied(t, portal.Client.Status().Update(testContext(t), denied), "[session.phase] a Session does not move from Approved to Denied")
		})
		t.Run("the sweeper starts it", func(t *testing.T) {
			active := ok.DeepCopy()
			active.Status.Phase = v1alpha1.PhaseActive
			wantDenied(t, sweeper.Client.Status().Update(testContext(t), active), "[session.phase]")
		})
		t.Run("the sweeper ends an active session, and cannot undo its end", func(t *testing.T) {
			active := ok.DeepCopy()
			active.Status.Phase = v1alpha1.PhaseActive
			active.Status.Grant = &v1alpha1.Grant{RoleBinding: "breakglass-s1", Role: v1alpha1.DebugRole, ExpiresAt: metav1.Now()}
			wantAdmitted(t, portal.Client.Status().Update(testContext(t), active))
			ended := active.DeepCopy()
			ended.Status.Phase = v1alpha1.PhaseEnded
			inMyName := ended.DeepCopy()
			inMyName.Status.End = &v1alpha1.End{By: "bob", Reason: v1alpha1.EndSwept, At: metav1.Now(), Abnormal: true}
			wantDenied(t, sweeper.Client.Status().Update(testContext(t), inMyName), "[session.sweeper-ends]")
			ended.Status.End = &v1alpha1.End{By: v1alpha1.SweeperUsername, Reason: v1alpha1.EndSwept, At: metav1.Now(), Abnormal: true}
			wantAdmitted(t, sweeper.Client.Status().Update(testContext(t), ended))
			again := ended.DeepCopy()
			again.Status.Phase = v1alpha1.PhaseActive
			wantDenied(t, portal.Client.Status().Update(testContext(t), again), "[session.phase]")
			reason := ended.DeepCopy()
			reason.Status.End.Reason = v1alpha1.EndUser
			wantDenied(t, sweeper.Client.Status().Update(testContext(t), reason), "[session.write-once]")
		})
		t.Run("deleting Sessions", func(t *testing.T) {
			running := session(ns, "s-running", "30m")
			wantAdmitted(t, portal.Client.Create(testContext(t), running))
			running.Status.Phase = v1alpha1.PhasePending
			wantAdmitted(t, portal.Client.Status().Update(testContext(t), running))
			wantDenied(t, admin.Client.Delete(testContext(t), running), "[session.delete] a Session is kept until it is over")
			// An ended session that needs no review is the team's to clean up.
			wantAdmitted(t, team.Client.Delete(testContext(t), s, client.DryRunAll))

			// One that ran keeps its record until its recording is finalized.
			ran := session(ns, "s-ran", "30m")
			wantAdmitted(t, portal.Client.Create(testContext(t), ran))
			ran.Status = v1alpha1.SessionStatus{Phase: v1alpha1.PhaseApproved,
				Approval: &v1alpha1.Approval{By: "bob", At: metav1.Now(), Mode: v1alpha1.ModeLive}}
			wantAdmitted(t, portal.Client.Status().Update(testContext(t), ran))
			started := metav1.Now()
			ran.Status.Phase, ran.Status.StartedAt, ran.Status.Deadline = v1alpha1.PhaseActive, &started, &started
			ran.Status.Grant = &v1alpha1.Grant{RoleBinding: "breakglass-s-ran", Role: v1alpha1.DebugRole, ExpiresAt: started}
			wantAdmitted(t, portal.Client.Status().Update(testContext(t), ran))
			ran.Status.Phase = v1alpha1.PhaseEnded
			ran.Status.End = &v1alpha1.End{By: v1alpha1.SweeperUsername, Reason: v1alpha1.EndSwept, At: metav1.Now(), Abnormal: true}
			wantAdmitted(t, sweeper.Client.Status().Update(testContext(t), ran))
			for who, u := range map[string]*cluster.User{"the app team": team, "a cluster admin": admin, "the portal": portal} {
				if err := u.Client.Delete(testContext(t), ran, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "[session.delete]") {
					t.Errorf("%s deleting an ended session with no recording yet: %v, want [session.delete]", who, err)
				}
			}
			ran.Status.Evidence = &v1alpha1.Evidence{ManifestSHA256: strings.Repeat("a", 64), URIs: []string{"file:///r/s-ran/manifest.json"}}
			wantAdmitted(t, sweeper.Client.Status().Update(testContext(t), ran))
			wantAdmitted(t, team.Client.Delete(testContext(t), ran, client.DryRunAll))

			// What the relay does when it could not write a new request's status.
			unwritten := session(ns, "s-unwritten", "30m")
			wantAdmitted(t, portal.Client.Create(testContext(t), unwritten))
			wantAdmitted(t, portal.Client.Delete(testContext(t), unwritten))
		})
	})
}

// appTeam is a person whose namespace Role may do anything with Sessions
// and their status in ns: what an app team's admin Role often grants.
func appTeam(t *testing.T, c *cluster.Cluster, ns string) *cluster.User {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "sessions-admin", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"sessions", "sessions/status"},
			Verbs: []string{"get", "list", "create", "update", "patch", "delete"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sessions-admin", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "mallory"}}}
	wantAdmitted(t, c.Client.Create(testContext(t), role))
	wantAdmitted(t, c.Client.Create(testContext(t), binding))
	u := mustUser(t)(c.As("mallory"))
	if err := debugsession.WaitAllowed(testContext(t), u.Kube, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update",
		Group: v1alpha1.GroupVersion.Group, Resource: "sessions", Subresource: "status"}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestPlaneDeleteScope deletes as the sweeper, which RBAC lets delete any
// RoleBinding and pod: the policy keeps it to its own.
func TestPlaneDeleteScope(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "sweep")
		sweeper := mustUser(t)(c.Sweeper())
		ctx := testContext(t)

		other := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "app-viewers", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "viewers"}},
		}
		wantAdmitted(t, c.Client.Create(ctx, other))
		wantDenied(t, sweeper.Client.Delete(ctx, other), "[delete.grants-only]")

		g := grant(t, c, ns, "s-sweep", v1alpha1.DebugRole)
		wantAdmitted(t, sweeper.Client.Delete(ctx, g))

		pod := appPod(t, c, ns, "never-debugged")
		wantDenied(t, sweeper.Client.Delete(ctx, pod), "[delete.debugged-pods-only]")

		// No delete-collection: RBAC refuses it, and the policy would too (no old object).
		if err := sweeper.Client.DeleteAllOf(ctx, &rbacv1.RoleBinding{}, client.InNamespace(ns)); !isForbiddenByRBAC(err) {
			t.Fatalf("want RBAC to refuse a delete-collection, got %v", err)
		}
	})
}
