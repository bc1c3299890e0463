package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/tower-dev/breakglass/localplane/tools"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

// TestFieldsJudged walks the core API's OpenAPI document of every claimed
// Kubernetes version and fails on every field of a schema the plane admits
// that the field table (policies/fieldtable.go) gives no verdict, naming
// the version that added it: a new minor version is one failure per new
// field, never a field the generated rules let through unjudged (they
// refuse it, so the plane would stop working for pods that set it). It
// also fails on a table row no claimed version serves, and shows that it
// would catch a field taken out of the table.
func TestFieldsJudged(t *testing.T) {
	prereq.Need(t, prereq.OpenAPISpecs)
	served := servedFields(t, claimedSpecs(t))
	judged := func(schema, field string, place policies.Place) bool {
		_, ok := policies.VerdictOf(schema, field, place)
		return ok
	}
	for _, miss := range unjudged(served, judged) {
		t.Error(miss)
	}
	for schema, byField := range policies.Verdicts() {
		for field := range byField {
			if _, ok := served[schema][field]; !ok {
				t.Errorf("the table judges %s.%s, which no claimed Kubernetes version serves: drop the row", schema, field)
			}
		}
	}

	// One field taken out of the table is one failure, naming it and its
	// first version.
	without := func(schema, field string, place policies.Place) bool {
		return (schema != "PodSpec" || field != "hostnameOverride") && judged(schema, field, place)
	}
	got := unjudged(served, without)
	want := []string{
		fmt.Sprintf("PodSpec.hostnameOverride (served since %s) has no verdict in a debug container", served["PodSpec"]["hostnameOverride"]),
		fmt.Sprintf("PodSpec.hostnameOverride (served since %s) has no verdict in a copy", served["PodSpec"]["hostnameOverride"]),
	}
	if !slices.Equal(got, want) {
		t.Errorf("with PodSpec.hostnameOverride out of the table the test finds %q, want %q", got, want)
	}
}

// servedFields are, for every schema the table judges, its fields and the
// first claimed version that serves each.
func servedFields(t *testing.T, versions []string) map[string]map[string]string {
	t.Helper()
	served := map[string]map[string]string{}
	for _, v := range versions {
		data, err := os.ReadFile(filepath.Join(tools.OpenAPIDir(), v, "api__v1_openapi.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Components struct {
				Schemas map[string]struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("the core API's OpenAPI document of %s: %v", v, err)
		}
		for _, s := range policies.Schemas {
			schema, ok := doc.Components.Schemas["io.k8s.api.core.v1."+s.Name]
			if !ok || len(schema.Properties) == 0 {
				t.Fatalf("Kubernetes %s serves no schema io.k8s.api.core.v1.%s", v, s.Name)
			}
			if served[s.Name] == nil {
				served[s.Name] = map[string]string{}
			}
			for f := range schema.Properties {
				if _, seen := served[s.Name][f]; !seen {
					served[s.Name][f] = v
				}
			}
		}
	}
	return served
}

// unjudged names every served field without a verdict in a place its
// schema is judged in.
func unjudged(served map[string]map[string]string, judged func(schema, field string, place policies.Place) bool) []string {
	var out []string
	for _, s := range policies.Schemas {
		fields := make([]string, 0, len(served[s.Name]))
		for f := range served[s.Name] {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		for _, f := range fields {
			for _, p := range s.Places {
				if !judged(s.Name, f, p) {
					out = append(out, fmt.Sprintf("%s.%s (served since %s) has no verdict in a %s", s.Name, f, served[s.Name][f], p.Words()))
				}
			}
		}
	}
	return out
}
