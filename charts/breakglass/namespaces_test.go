package chart_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/vap"
)

// TestNamespaceBindings: the chart renders the chart-bound grant policies'
// bindings from its values exactly as vap.Bind builds them for the tests,
// leaves the system namespaces to GrantGuard, and renders none when the
// values ask for nothing.
func TestNamespaceBindings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   vap.ChartValues
	}{
		{"defaults", nil, vap.ChartValues{}},
		{"protected and opt-in", map[string]any{"params": map[string]any{
			"protectedNamespaces": []any{"payments", "kube-system", "ledger", "payments"}, "requireNamespaceOptIn": true}},
			vap.ChartValues{ProtectedNamespaces: []string{"payments", "ledger"}, RequireNamespaceOptIn: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := valuesFile(t, "flight-defaults.yaml")
			out, err := Render(chartutil.CoalesceTables(tc.values, base), namespace)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := manifests.Decode([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			for _, o := range objs {
				if o.GetKind() != "ValidatingAdmissionPolicyBinding" {
					continue
				}
				b, _ := o.MarshalJSON()
				var vb admissionregistrationv1.ValidatingAdmissionPolicyBinding
				if err := yaml.Unmarshal(b, &vb); err != nil {
					t.Fatal(err)
				}
				got[vb.Name] = &vb
			}
			pairs, err := vap.BuildAll(policies.Flight, policies.DefaultParams())
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range vap.Bind(pairs, tc.want) {
				if !policyIsChartBound(pr.Policy.Name) {
					continue
				}
				rendered := got[pr.Policy.Name]
				if pr.Binding == nil {
					if rendered != nil {
						t.Errorf("%s: rendered though the values ask for nothing: %+v", pr.Policy.Name, rendered.Spec)
					}
					continue
				}
				if rendered == nil {
					t.Errorf("%s: not rendered", pr.Policy.Name)
					continue
				}
				if d := cmp.Diff(pr.Binding, rendered); d != "" {
					t.Errorf("%s: the chart's binding differs from vap.Bind's (-vap +chart):\n%s", pr.Policy.Name, d)
				}
			}
		})
	}
}

func policyIsChartBound(name string) bool {
	for _, p := range policies.All() {
		if p.Name == name {
			return p.ChartBound
		}
	}
	return false
}
