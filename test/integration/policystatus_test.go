package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	chart "github.com/tower-dev/breakglass/charts/breakglass"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
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
		typeCheckAll(t, typeChecker(dc), p)
	})
}

// typeChecker is the API server's type checker, with the schemas dc's
// OpenAPI documents hold and its server's resources.
func typeChecker(dc discovery.DiscoveryInterface) *validating.TypeChecker {
	return &validating.TypeChecker{
		SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: dc},
		RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
	}
}

// typeCheckAll fails t for each warning checker gives a policy of profile
// p, and when it resolves no schema for one (a misspelt field must warn).
func typeCheckAll(t *testing.T, checker *validating.TypeChecker, p policies.Profile) {
	t.Helper()
	for _, policy := range checkable(t, p) {
		t.Run(policy.Name, func(t *testing.T) {
			for _, w := range checker.Check(policy) {
				t.Errorf("%s: %s", w.FieldRef, w.Warning)
			}
			canary := policy.DeepCopy()
			canary.Spec.Validations = append(canary.Spec.Validations, admissionregistrationv1.Validation{Expression: "object.metadata.nmae == 'x'"})
			if len(checker.Check(canary)) == 0 {
				t.Error("no warning for object.metadata.nmae: the type checker did not resolve this policy's types")
			}
		})
	}
}

// checkable is every policy of profile p the type checker can check: it
// skips subresources, and the object of a pods/ephemeralcontainers update
// is a Pod, so that one is mapped to pods.
func checkable(t *testing.T, p policies.Profile) []*admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	pairs, err := vap.BuildAll(p, policies.DefaultParams(cluster.DebugImage))
	if err != nil {
		t.Fatal(err)
	}
	var out []*admissionregistrationv1.ValidatingAdmissionPolicy
	for _, pr := range pairs {
		policy := pr.Policy.DeepCopy()
		ok := false
		for i, r := range policy.Spec.MatchConstraints.ResourceRules {
			for j, res := range r.Resources {
				if res == "pods/ephemeralcontainers" {
					policy.Spec.MatchConstraints.ResourceRules[i].Resources[j] = "pods"
				}
				if !strings.Contains(policy.Spec.MatchConstraints.ResourceRules[i].Resources[j], "/") {
					ok = true
				}
			}
		}
		if ok {
			out = append(out, policy)
		}
	}
	return out
}

// TestUnrenderedFailsClosed applies the chart's debug-container policy as
// its files hold it, without the template's rendering of the settings, and
// bound to one namespace: the API server admits the policy (its
// placeholders are CEL that compiles), and it then refuses a debug
// container that the rendered one admits, naming the setting.
func TestUnrenderedFailsClosed(t *testing.T) {
	eachProfile(t, func(t *testing.T, profile policies.Profile, c *cluster.Cluster) {
		ctx := testContext(t)
		ns := namespace(t, c, "unrendered")
		stream, err := chart.Plane(string(profile))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := manifests.Decode(stream)
		if err != nil {
			t.Fatal(err)
		}
		name := policies.DebugContainer().Name
		for _, o := range objs {
			if o.GetName() != name || (o.GetKind() != "ValidatingAdmissionPolicy" && o.GetKind() != "ValidatingAdmissionPolicyBinding") {
				continue
			}
			o.SetName(name + "-unrendered")
			if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
				if err := unstructured.SetNestedField(o.Object, name+"-unrendered", "spec", "policyName"); err != nil {
					t.Fatal(err)
				}
				if err := unstructured.SetNestedField(o.Object, map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: ns}},
					"spec", "matchResources", "namespaceSelector"); err != nil {
					t.Fatal(err)
				}
			}
			wantAdmitted(t, c.Client.Create(ctx, o))
			t.Cleanup(func() { _ = c.Client.Delete(context.Background(), o) })
		}
		appPod(t, c, ns, "web-1")
		portal := c.GrantedPortal(t, ns, "s1", "30m")
		// The policy reaches the API server's informers a moment after it is made.
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := portal.AddDebugContainer(ctx, ns, "web-1", cluster.DebugContainer(fmt.Sprintf("breakglass-s%d", time.Now().UnixNano()), cluster.DebugImage))
			if err != nil {
				wantDenied(t, err, `variable "`+policies.DebugImagesSetting.Variable+`" fails to evaluate`)
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("a debug container was admitted under the unrendered policy after 30s")
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}
