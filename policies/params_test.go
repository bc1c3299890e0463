package policies

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSettingsCoverParams: every value of Params is a setting some policy
// reads, under its own variable, and each renders as a literal.
func TestSettingsCoverParams(t *testing.T) {
	var leaves []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, e := range m {
				walk(prefix+k+".", e)
			}
			return
		}
		leaves = append(leaves, strings.TrimSuffix(prefix, "."))
	}
	b, err := json.Marshal(DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	walk("", m)
	read := map[string]bool{}
	for _, p := range All() {
		for _, s := range p.Settings {
			read[s.Variable] = true
		}
	}
	var paths []string
	variables := map[string]bool{}
	for _, s := range Settings {
		paths = append(paths, s.Path)
		if variables[s.Variable] {
			t.Errorf("%s: two settings share the variable", s.Variable)
		}
		variables[s.Variable] = true
		if !read[s.Variable] {
			t.Errorf("setting %s: no policy reads it", s.Variable)
		}
		if _, err := s.Literal(DefaultParams()); err != nil {
			t.Error(err)
		}
	}
	sort.Strings(leaves)
	sort.Strings(paths)
	if diff := cmp.Diff(leaves, paths); diff != "" {
		t.Errorf("Params' values and the settings differ (-params +settings):\n%s", diff)
	}
}

func TestLiteral(t *testing.T) {
	p := DefaultParams("r.example/d@sha256:" + strings.Repeat("a", 64))
	for _, tc := range []struct {
		s    Setting
		want string
	}{
		{DebugImagesSetting, `["r.example/d@sha256:` + strings.Repeat("a", 64) + `"]`},
		{DebugUserIDSetting, `65532`},
		{RuntimeClassesSetting, `[]`},
		{GrantTTLMaxSetting, `"75m"`},
		{ExtensionsMaxSetting, `1`},
	} {
		if got, err := tc.s.Literal(p); err != nil || got != tc.want {
			t.Errorf("%s: %s %v, want %s", tc.s.Variable, got, err, tc.want)
		}
	}
	// A list left nil renders as none allowed, as the chart's [] does.
	p.RuntimeClasses = nil
	if got, _ := RuntimeClassesSetting.Literal(p); got != "[]" {
		t.Errorf("nil runtime classes: %s", got)
	}
	if _, err := (Setting{Variable: "x", Path: "grantTTL.min.x"}).Literal(p); err == nil {
		t.Error("a path past a value rendered")
	}
}

func TestValidateNamesEveryWrongField(t *testing.T) {
	if errs := DefaultParams().Validate(); len(errs) > 0 {
		t.Fatalf("the defaults: %v", errs)
	}
	bad := Params{
		DebugImages:     []string{"r.example/d:latest"},
		GrantTTL:        DurationBounds{Min: "75m", Max: "15m"},
		SessionDuration: DurationBounds{Min: "forever", Max: ""},
		Extensions:      ExtensionBounds{Max: 5, MaxTotal: "2d"},
		RuntimeClasses:  []string{""},
		DebugUserID:     0,
	}
	errs := bad.Validate().ToAggregate().Error()
	for _, field := range []string{
		"params.debugImages[0]", "params.grantTTL.max", "params.sessionDuration.min", "params.sessionDuration.max",
		"params.extensions.max", "params.extensions.maxTotal", "params.runtimeClasses[0]", "params.debugUserID",
	} {
		if !strings.Contains(errs, field) {
			t.Errorf("%s not named in: %s", field, errs)
		}
	}
}
