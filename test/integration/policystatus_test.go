package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/cluster"
	"github.com/tower-dev/breakglass/vap"
)

// TestTypeChecked type-checks every policy against the real API server's
// schemas (pods, RoleBindings, Sessions, PolicyParams) with the API server's
// own type checker, the one the controller manager runs to fill a policy's
// status.typeChecking (this control plane runs no controller manager).
// That checker skips subresources; the object of a pods/ephemeralcontainers
// update is a Pod, so the check maps it to pods. The options of exec and
// attach have no schema to check against; their cases cover them.
func TestTypeChecked(t *testing.T) {
	eachProfile(t, func(t *testing.T, p policies.Profile, c *cluster.Cluster) {
		dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
		if err != nil {
			t.Fatal(err)
		}
		checker := &validating.TypeChecker{
			SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: dc},
			RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		}
		pairs, err := vap.BuildAll(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range pairs {
			policy := pr.Policy.DeepCopy()
			checkable := false
			for i, r := range policy.Spec.MatchConstraints.ResourceRules {
				for j, res := range r.Resources {
					if res == "pods/ephemeralcontainers" {
						policy.Spec.MatchConstraints.ResourceRules[i].Resources[j] = "pods"
					}
					if !strings.Contains(policy.Spec.MatchConstraints.ResourceRules[i].Resources[j], "/") {
						checkable = true
					}
				}
			}
			if !checkable {
				continue
			}
			t.Run(pr.Policy.Name, func(t *testing.T) {
				for _, w := range checker.Check(policy) {
					t.Errorf("%s: %s", w.FieldRef, w.Warning)
				}
				// The check must see the schema: a misspelt field has to warn.
				canary := policy.DeepCopy()
				canary.Spec.Validations = append(canary.Spec.Validations, admissionregistrationv1.Validation{Expression: "object.metadata.nmae == 'x'"})
				if len(checker.Check(canary)) == 0 {
					t.Error("no warning for object.metadata.nmae: the type checker did not resolve this policy's types")
				}
			})
		}
	})
}

// TestWithoutParams removes the PolicyParams object: what reads it fails
// closed, and nothing else in the cluster waits on it.
func TestWithoutParams(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "no-params")
		ctx := testContext(t)
		params := &v1alpha1.PolicyParams{}
		params.Name = v1alpha1.ParamsName
		if err := c.Client.Delete(ctx, params); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx := context.Background()
			if err := c.Apply(ctx, v1alpha1.DefaultPolicyParams(cluster.DebugImage)); err != nil {
				t.Errorf("restoring params: %v", err)
			}
			if err := c.WaitEnforced(ctx); err != nil {
				t.Errorf("after restoring params: %v", err)
			}
		})
		rb := cluster.ProbeGrant("s-noparams", "30m")
		rb.Namespace = ns
		portal := mustUser(t)(c.Portal())
		// The informer takes a moment to see the delete.
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := portal.Client.Create(ctx, rb.DeepCopy(), dryRun)
			if err != nil && strings.Contains(err.Error(), "no params found") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a grant without params: want refused for missing params, got %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "ordinary", Namespace: ns, Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.2"}}},
		}
		wantAdmitted(t, c.Client.Create(ctx, pod))
		wantAdmitted(t, c.Client.Delete(ctx, pod))
		viewers := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "viewers", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "viewers"}},
		}
		wantAdmitted(t, c.Client.Create(ctx, viewers))
	})
}
