package vap

import (
	"encoding/json"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tower-dev/breakglass/policies"
)

// The design the rendered settings replaced, kept for the benchmarks to
// measure against in the same run: the policies read their settings from a
// cluster-scoped params object that the API server converts for CEL on
// every request they match.
const (
	BaselineParamsGroup = "breakglass.tower.dev"
	BaselineParamsKind  = "PolicyParams"
)

// ParamsObjectBaseline is pairs as they were before their settings were
// rendered in: each setting's variable reads params.spec.<path> from the
// object named "default" of BaselineParamsKind, which it returns with
// params as its spec.
func ParamsObjectBaseline(pairs []Pair, params policies.Params) ([]Pair, *unstructured.Unstructured, error) {
	settings := map[string]policies.Setting{}
	for _, s := range policies.Settings {
		settings[s.Variable] = s
	}
	apiVersion := BaselineParamsGroup + "/v1alpha1"
	out := make([]Pair, len(pairs))
	for i, pr := range pairs {
		policy, binding := pr.Policy.DeepCopy(), pr.Binding.DeepCopy()
		for j, v := range policy.Spec.Variables {
			s, ok := settings[v.Name]
			if !ok {
				continue
			}
			policy.Spec.Variables[j].Expression = "params.spec." + s.Path
			policy.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: apiVersion, Kind: BaselineParamsKind}
			if binding != nil {
				deny := admissionregistrationv1.DenyAction
				binding.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "default", ParameterNotFoundAction: &deny}
			}
		}
		out[i] = Pair{Policy: policy, Binding: binding}
	}
	js, err := json.Marshal(params)
	if err != nil {
		return nil, nil, err
	}
	var spec map[string]any
	if err := json.Unmarshal(js, &spec); err != nil {
		return nil, nil, err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": BaselineParamsKind,
		"metadata": map[string]any{"name": "default"}, "spec": integers(spec),
	}}
	return out, obj, nil
}
