package sweeper

import "testing"

// TestDiffers: a field rendered must stand as rendered; a field added is
// drift unless it is empty or the API server's own default.
func TestDiffers(t *testing.T) {
	rendered := map[string]any{"policyName": "p", "validationActions": []any{"Deny"},
		"matchResources": map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}}}}
	for _, tc := range []struct {
		name string
		got  map[string]any
		want string
	}{
		{"as rendered, with the API server's defaults", map[string]any{"policyName": "p", "validationActions": []any{"Deny"},
			"matchResources": map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}},
				"namespaceSelector": map[string]any{}, "matchPolicy": "Equivalent"}}, ""},
		{"switched to Audit", map[string]any{"policyName": "p", "validationActions": []any{"Audit"},
			"matchResources": map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}}}}, ".spec.validationActions[0]"},
		{"Warn added beside Deny", map[string]any{"policyName": "p", "validationActions": []any{"Deny", "Warn"},
			"matchResources": map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}}}}, ".spec.validationActions"},
		{"narrowed to some namespaces", map[string]any{"policyName": "p", "validationActions": []any{"Deny"},
			"matchResources": map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}},
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": "none"}}}}, ".spec.matchResources.namespaceSelector"},
		{"a default changed", map[string]any{"policyName": "p", "validationActions": []any{"Deny"},
			"matchResources": map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}}, "matchPolicy": "Exact"}}, ".spec.matchResources.matchPolicy"},
		{"a selector dropped", map[string]any{"policyName": "p", "validationActions": []any{"Deny"}, "matchResources": map[string]any{}},
			".spec.matchResources.objectSelector"},
	} {
		if got := differs(rendered, tc.got, ".spec"); got != tc.want {
			t.Errorf("%s: differs says %q, want %q", tc.name, got, tc.want)
		}
	}
}
