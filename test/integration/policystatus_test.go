package integration

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/cluster"
	"github.com/tower-dev/breakglass/vap"
)

// TestTypeChecked type-checks every policy against the real API server's
// schemas (pods, RoleBindings, Sessions) with the API server's
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
		pairs, err := vap.BuildAll(p, policies.DefaultParams(cluster.DebugImage))
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
