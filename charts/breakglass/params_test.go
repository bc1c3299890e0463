package chart_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/vap"
)

// TestParamsRenderedAsInGo: the chart's template renders its params into
// the policies exactly as manifests.Plane does in Go, which the tests and
// the local plane install: the same objects, for the defaults and for
// params that change every setting.
func TestParamsRenderedAsInGo(t *testing.T) {
	digest := func(c string) string { return "registry.example/breakglass/debug@sha256:" + strings.Repeat(c, 64) }
	every := policies.Params{
		DebugImages:          []string{digest("a"), digest("b")},
		GrantTTL:             policies.DurationBounds{Min: "20m", Max: "1h10m"},
		SessionDuration:      policies.DurationBounds{Min: "16m", Max: "70m"},
		Extensions:           policies.ExtensionBounds{Max: 3, MaxTotal: "3h"},
		RuntimeClasses:       []string{"gvisor", "kata.containers-v2"},
		DebugUserID:          70000,
		NodeAccessNamespaces: []string{"monitoring", "cni"},
	}
	for name, params := range map[string]policies.Params{"defaults": policies.DefaultParams(), "every setting": every} {
		for _, profile := range policies.Profiles {
			t.Run(name+"/"+string(profile), func(t *testing.T) {
				js, err := json.Marshal(map[string]any{
					"profile": profile, "params": params,
					"webhook": map[string]any{"policies": []any{map[string]any{"name": "p", "repository": "r", "key": "/k"}}},
				})
				if err != nil {
					t.Fatal(err)
				}
				values, err := chartutil.ReadValues(js)
				if err != nil {
					t.Fatal(err)
				}
				out, err := Render(values, namespace)
				if err != nil {
					t.Fatal(err)
				}
				rendered, err := manifests.Decode([]byte(out))
				if err != nil {
					t.Fatal(err)
				}
				helm := map[string]map[string]any{}
				for _, o := range rendered {
					if o.GetKind() == "ValidatingAdmissionPolicy" {
						helm[o.GetName()] = o.Object
					}
				}
				inGo, err := manifests.Plane(profile, params)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, o := range inGo {
					if o.GetKind() != "ValidatingAdmissionPolicy" {
						continue
					}
					n++
					if diff := cmp.Diff(o.Object, helm[o.GetName()]); diff != "" {
						t.Errorf("%s rendered by Helm differs from Go (-go +helm):\n%s", o.GetName(), diff)
					}
				}
				if n == 0 || n != len(helm) {
					t.Fatalf("%d policies rendered in Go, %d by Helm", n, len(helm))
				}
				if strings.Contains(out, "@params.") {
					t.Fatal("a placeholder was left in the chart's render")
				}
				// And what both render compiles and type-checks as the
				// policies' own builder binds it.
				if _, err := vap.BuildAll(profile, params); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestDefaultParamsAreTheCharts: policies.DefaultParams, which the tests
// and the local plane install, is what the chart's values.yaml says, spelled
// the same way, so both render the same policies.
func TestDefaultParamsAreTheCharts(t *testing.T) {
	values, err := chartutil.ReadValuesFile("values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(values["params"])
	if err != nil {
		t.Fatal(err)
	}
	var chart policies.Params
	if err := json.Unmarshal(js, &chart); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(policies.DefaultParams(), chart); diff != "" {
		t.Errorf("DefaultParams differ from the chart's values (-go +chart):\n%s", diff)
	}
}

// TestSettingsCheckedWithoutSchema: what no policy can take is refused by
// the template itself when the values schema is skipped
// (--skip-schema-validation): an unpinned debug image, a root user id.
func TestSettingsCheckedWithoutSchema(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"an unpinned image", "params: {debugImages: [registry.example/debug:latest]}", "params.debugImages"},
		{"root", "params: {debugUserID: 0}", "params.debugUserID"},
		{"past Kubernetes' ids", "params: {debugUserID: 9223372036854775807}", "params.debugUserID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := chartutil.ReadValues([]byte(tc.values + "\nwebhook: {policies: [{name: p, repository: r, key: /k}]}\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = installWith(v, namespace, kube137, true)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want the template to refuse %s", err, tc.want)
			}
		})
	}
}
