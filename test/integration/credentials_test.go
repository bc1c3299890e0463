package integration

import (
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// TestPlaneCredentials mints the plane's identities as a cluster admin
// would: kubectl create token for each plane account, and a legacy token
// Secret that the token controller would fill with a token that never
// expires. Both are refused; an app's own account's token is not the
// plane's business. (The kubelet's token for the relay's pod is admitted:
// the chart's real-node suite runs the relay on it.)
func TestPlaneCredentials(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ctx := testContext(t)
		admin := mustUser(t)(c.As("alice", "system:masters"))
		request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](365 * 24 * 3600)}}
		for _, sa := range []string{v1alpha1.PortalServiceAccount, v1alpha1.SweeperServiceAccount, v1alpha1.WebhookServiceAccount} {
			_, err := admin.Kube.CoreV1().ServiceAccounts(v1alpha1.Namespace).CreateToken(ctx, sa, request, metav1.CreateOptions{})
			wantDenied(t, err, "[credentials.token-kubelet-only]")
		}
		ns := namespace(t, c, "tokens")
		wantAdmitted(t, c.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PortalServiceAccount, Namespace: ns}}))
		if _, err := admin.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, v1alpha1.PortalServiceAccount, request, metav1.CreateOptions{}); err != nil {
			t.Fatalf("a token for an app's namesake account: %v", err)
		}

		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "portal-forever", Namespace: v1alpha1.Namespace,
				Annotations: map[string]string{corev1.ServiceAccountNameKey: v1alpha1.PortalServiceAccount}},
			Type: corev1.SecretTypeServiceAccountToken,
		}
		wantDenied(t, admin.Client.Create(ctx, secret, dryRun), "[credentials.no-token-secret]")
	})
}

// TestPlaneCRDsKept deletes the Session CRD as a cluster admin (a dry run):
// refused on Flight, where it would take every Session with it; Ground
// keeps a cluster admin's say.
func TestPlaneCRDsKept(t *testing.T) {
	eachProfile(t, func(t *testing.T, p policies.Profile, c *cluster.Cluster) {
		ctx := testContext(t)
		admin := mustUser(t)(c.As("alice", "system:masters"))
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "sessions." + v1alpha1.GroupVersion.Group}}
		err := admin.Client.Delete(ctx, crd, client.DryRunAll)
		if p == policies.Flight {
			wantDenied(t, err, "[crds.kept]")
		} else {
			wantAdmitted(t, err)
		}
	})
}

// TestCopyStaysAsAdmitted updates an admitted copy as an app team, a
// cluster admin and the portal would: its image, its labels (the app's, to
// draw the app's traffic, or none, to leave the plane's sight), its
// annotations and its status. Each is refused; the copy is unchanged.
func TestCopyStaysAsAdmitted(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ctx := testContext(t)
		ns := namespace(t, c, "copy-updates")
		portal := mustUser(t)(c.Portal())
		grant(t, c, ns, "s-updates", v1alpha1.DebugRole)
		cp, err := sessionobjects.CopyPod(richTarget(ns), sessiontest.Make(ns, "s-updates").Mode(v1alpha1.ModeCopy).Obj(), "breakglass-s-updates", cluster.DebugImage, false, 30*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		wantAdmitted(t, portal.Client.Create(ctx, cp))
		admin := mustUser(t)(c.As("alice", "system:masters"))
		for name, change := range map[string]func(*corev1.Pod){
			"the debug image swapped": func(p *corev1.Pod) {
				p.Spec.Containers[len(p.Spec.Containers)-1].Image = "registry.example/miner@sha256:" + strings.Repeat("f", 64)
			},
			"the app's labels":       func(p *corev1.Pod) { p.Labels["app"] = "web" },
			"the session label gone": func(p *corev1.Pod) { delete(p.Labels, v1alpha1.SessionLabel) },
			"a cloud role":           func(p *corev1.Pod) { p.Annotations = map[string]string{"iam.amazonaws.com/role": "shop-web"} },
		} {
			cur := &corev1.Pod{}
			wantAdmitted(t, c.Client.Get(ctx, client.ObjectKeyFromObject(cp), cur))
			change(cur)
			if err := admin.Client.Update(ctx, cur, dryRun); err == nil || !strings.Contains(err.Error(), "[copy.unchanged]") {
				t.Errorf("%s: %v, want [copy.unchanged]", name, err)
			}
		}
		cur := &corev1.Pod{}
		wantAdmitted(t, c.Client.Get(ctx, client.ObjectKeyFromObject(cp), cur))
		cur.Status.Phase = corev1.PodSucceeded
		wantDenied(t, admin.Client.Status().Update(ctx, cur, dryRun), "[copy.status-by-its-node]")
	})
}

// TestPortalByNameOnly acts as the portal's name and groups without a pod's
// token, as an impersonator or a client certificate naming the account
// would: what only the portal may do is refused (a Session, a debug
// container on Flight), and the fences that hold the plane's accounts to
// less still hold it (it deletes no other RoleBinding).
func TestPortalByNameOnly(t *testing.T) {
	eachProfile(t, func(t *testing.T, p policies.Profile, c *cluster.Cluster) {
		ctx := testContext(t)
		ns := namespace(t, c, "by-name")
		byName := mustUser(t)(c.AsServiceAccountByName(v1alpha1.Namespace, v1alpha1.PortalServiceAccount))
		wantDenied(t, byName.Client.Create(ctx, session(ns, "s-by-name", "30m")), "[session.portal-creates]")
		appPod(t, c, ns, "web-1")
		grant(t, c, ns, "s-by-name", v1alpha1.DebugRole)
		err := addDebugContainer(t, byName, ns, "web-1", debugContainer("breakglass-by-name"), false)
		if p == policies.Flight {
			wantDenied(t, err, "[debug.portal-only]")
		} else {
			wantAdmitted(t, err)
		}
		other := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "bob"}}}
		wantAdmitted(t, c.Client.Create(ctx, other))
		wantDenied(t, byName.Client.Delete(ctx, other, dryRun), "[delete.grants-only]")
	})
}
