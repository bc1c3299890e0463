package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/vap"
)

// bindTo narrows a binding to the namespace ns, and to the namespaces it
// already selects (a chart-bound policy's), so each policy still applies
// there only where it would in a cluster.
func bindTo(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, ns string) {
	if b.Spec.MatchResources == nil {
		b.Spec.MatchResources = &admissionregistrationv1.MatchResources{}
	}
	if b.Spec.MatchResources.NamespaceSelector == nil {
		b.Spec.MatchResources.NamespaceSelector = &metav1.LabelSelector{}
	}
	sel := b.Spec.MatchResources.NamespaceSelector
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[corev1.LabelMetadataName] = ns
}

// BenchmarkEphemeralContainerPatchOneServer adds debug containers on one
// API server, taking turns between four namespaces: one where the plane's
// debug-container policy applies, with its settings rendered in; one where
// the same policy reads them from a params object, as it did before (the
// baseline of the rendering); one where a policy with a single `true` rule
// applies (what any admission policy on this path costs the API server:
// the pod converted for CEL, an activation built); and one with none. One
// server and one etcd for all four, so the ratios measure the policies,
// not two machines' noise.
func BenchmarkEphemeralContainerPatchOneServer(b *testing.B) {
	c := bareCluster(b)
	ctx := context.Background()
	stamp := time.Now().UnixNano()
	ours := newPatcher(b, c, fmt.Sprintf("bench-ours-%d", stamp))
	before := newPatcher(b, c, fmt.Sprintf("bench-params-%d", stamp))
	floor := newPatcher(b, c, fmt.Sprintf("bench-floor-%d", stamp))
	none := newPatcher(b, c, fmt.Sprintf("bench-none-%d", stamp))

	params := policies.DefaultParams(cluster.DebugImage)
	bound, err := policies.DebugContainer().WithParams(params)
	if err != nil {
		b.Fatal(err)
	}
	pair := vap.Build(bound, policies.Flight)
	pair.Policy.Name = fmt.Sprintf("bench-ours-%d", stamp)
	pair.Binding.Name, pair.Binding.Spec.PolicyName = pair.Policy.Name, pair.Policy.Name
	bindTo(pair.Binding, ours.ns)
	baseline, paramsObject, err := vap.ParamsObjectBaseline([]vap.Pair{pair}, params)
	if err != nil {
		b.Fatal(err)
	}
	old := baseline[0]
	old.Policy.Name = fmt.Sprintf("bench-params-%d", stamp)
	old.Binding.Name, old.Binding.Spec.PolicyName = old.Policy.Name, old.Policy.Name
	old.Binding.Spec.MatchResources.NamespaceSelector.MatchLabels[corev1.LabelMetadataName] = before.ns
	installParamsKind(b, c, paramsObject)
	trivial := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-floor-%d", stamp)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: pair.Policy.Spec.MatchConstraints.DeepCopy(),
			Validations:      []admissionregistrationv1.Validation{{Expression: "true"}},
		},
	}
	trivialBinding := pair.Binding.DeepCopy()
	trivialBinding.Name, trivialBinding.Spec.PolicyName = trivial.Name, trivial.Name
	bindTo(trivialBinding, floor.ns)
	for _, obj := range []any{pair.Policy, old.Policy, trivial, pair.Binding, old.Binding, trivialBinding} {
		var err error
		switch o := obj.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			err = c.Client.Create(ctx, o)
			b.Cleanup(func() { _ = c.Client.Delete(context.Background(), o) })
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			err = c.Client.Create(ctx, o)
			b.Cleanup(func() { _ = c.Client.Delete(context.Background(), o) })
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	// Wait until both versions of the plane's policy are enforced: a debug
	// container they refuse is refused in their namespaces.
	for _, p := range []*patcher{ours, before} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			bad := debugContainer(fmt.Sprintf("breakglass-probe-%d", time.Now().UnixNano()))
			bad.SecurityContext.RunAsUser = ptr.To[int64](0)
			p.ensurePod(b)
			if err := p.user.AddDebugContainer(ctx, p.ns, p.pod, bad); err != nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("the plane's policy is not enforced in %s after 30s", p.ns)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	order := []*patcher{ours, before, floor, none}
	spent := map[*patcher]time.Duration{}
	turn := 0
	for b.Loop() {
		// Each goes first in turn, so none gains from a warm cache.
		for i := range order {
			p := order[(turn+i)%len(order)]
			spent[p] += p.next(b)
		}
		turn = (turn + 1) % len(order)
	}
	b.ReportMetric(float64(spent[ours].Microseconds())/float64(b.N), "µs/patch-ours")
	b.ReportMetric(float64(spent[before].Microseconds())/float64(b.N), "µs/patch-params-object")
	b.ReportMetric(float64(spent[floor].Microseconds())/float64(b.N), "µs/patch-one-true-rule")
	b.ReportMetric(float64(spent[none].Microseconds())/float64(b.N), "µs/patch-none")
	b.ReportMetric(float64(spent[ours])/float64(spent[none]), "ratio-ours/none")
	b.ReportMetric(float64(spent[before])/float64(spent[none]), "ratio-params-object/none")
	b.ReportMetric(float64(spent[ours])/float64(spent[before]), "ratio-ours/params-object")
	b.ReportMetric(float64(spent[floor])/float64(spent[none]), "ratio-floor/none")
	b.ReportMetric(float64(spent[ours])/float64(spent[floor]), "ratio-ours/floor")
}

// installParamsKind serves the params kind of the baseline design, as its
// CRD served it, and creates its one object.
func installParamsKind(b *testing.B, c *cluster.Cluster, obj *unstructured.Unstructured) {
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "policyparams." + vap.BaselineParamsGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: vap.BaselineParamsGroup, Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "policyparams", Singular: "policyparams", Kind: vap.BaselineParamsKind, ListKind: vap.BaselineParamsKind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					}}}}},
		},
	}
	if err := c.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Client.Delete(context.Background(), crd) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Client.Create(ctx, obj.DeepCopy())
		if err == nil || apierrors.IsAlreadyExists(err) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the baseline's params object: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
