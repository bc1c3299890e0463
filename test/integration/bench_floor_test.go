package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/cluster"
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
// API server, taking turns between three namespaces: one where the plane's
// debug-container policy applies, one where a policy with a single `true`
// rule applies (what any admission policy on this path costs the API server:
// the pod converted for CEL, params looked up, an activation built), and one
// with none. One server and one etcd for all three, so the ratios measure
// the policies, not two machines' noise.
func BenchmarkEphemeralContainerPatchOneServer(b *testing.B) {
	c := bareCluster(b)
	ctx := context.Background()
	stamp := time.Now().UnixNano()
	ours := newPatcher(b, c, fmt.Sprintf("bench-ours-%d", stamp))
	floor := newPatcher(b, c, fmt.Sprintf("bench-floor-%d", stamp))
	none := newPatcher(b, c, fmt.Sprintf("bench-none-%d", stamp))

	bound, err := policies.DebugContainer().WithParams(policies.DefaultParams(cluster.DebugImage))
	if err != nil {
		b.Fatal(err)
	}
	pair := vap.Build(bound, policies.Flight)
	pair.Policy.Name = fmt.Sprintf("bench-ours-%d", stamp)
	pair.Binding.Name, pair.Binding.Spec.PolicyName = pair.Policy.Name, pair.Policy.Name
	bindTo(pair.Binding, ours.ns)
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
	for _, obj := range []any{pair.Policy, trivial, pair.Binding, trivialBinding} {
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
	// Wait until both policies are enforced: a debug container the plane's
	// policy refuses is refused in its namespace.
	deadline := time.Now().Add(30 * time.Second)
	for {
		bad := debugContainer(fmt.Sprintf("breakglass-probe-%d", time.Now().UnixNano()))
		bad.SecurityContext.RunAsUser = ptr.To[int64](0)
		ours.ensurePod(b)
		if err := ours.user.AddDebugContainer(ctx, ours.ns, ours.pod, bad); err != nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the plane's policy is not enforced after 30s")
		}
		time.Sleep(200 * time.Millisecond)
	}

	var tOurs, tFloor, tNone time.Duration
	turn := 0
	for b.Loop() {
		// Each goes first in turn, so none gains from a warm cache.
		order := []*patcher{ours, floor, none}
		order = append(order[turn:], order[:turn]...)
		for _, p := range order {
			d := p.next(b)
			switch p {
			case ours:
				tOurs += d
			case floor:
				tFloor += d
			default:
				tNone += d
			}
		}
		turn = (turn + 1) % 3
	}
	b.ReportMetric(float64(tOurs.Microseconds())/float64(b.N), "µs/patch-ours")
	b.ReportMetric(float64(tFloor.Microseconds())/float64(b.N), "µs/patch-one-true-rule")
	b.ReportMetric(float64(tNone.Microseconds())/float64(b.N), "µs/patch-none")
	b.ReportMetric(float64(tOurs)/float64(tNone), "ratio-ours/none")
	b.ReportMetric(float64(tFloor)/float64(tNone), "ratio-floor/none")
	b.ReportMetric(float64(tOurs)/float64(tFloor), "ratio-ours/floor")
}
