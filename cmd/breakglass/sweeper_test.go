package main

import (
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/sweeper"
)

// TestPlaneAsInstalled: the profile and params the drift backstop compares
// with are read as the chart passes them, and anything else is refused
// with what is wrong.
func TestPlaneAsInstalled(t *testing.T) {
	digest := "registry.example/debug@sha256:" + strings.Repeat("a", 64)
	var opts sweeper.Options
	if err := planeAsInstalled(&opts, "flight", `{"debugImages":["`+digest+`"],"protectedNamespaces":["payments"],"nodeAccessNamespaces":["monitoring"]}`); err != nil {
		t.Fatal(err)
	}
	if opts.Profile != policies.Flight || opts.Params.DebugImages[0] != digest || opts.Params.NodeAccessNamespaces[0] != "monitoring" ||
		opts.Params.GrantTTL.Max != "75m" {
		t.Fatalf("read %+v %+v: want flight, the image, the namespace and the defaults for the rest", opts.Profile, opts.Params)
	}
	for _, tc := range []struct{ profile, params, want string }{
		{"", `{}`, "--params: needs --profile"},
		{"staging", `{}`, `"staging" is no policy set`},
		{"flight", "", "needs --params"},
		{"flight", `{"debugImages":`, "not the chart's params as JSON"},
		{"ground", `{"debugUserID":0}`, "params.debugUserID"},
		{"ground", `{"nodeAccessNamespaces":["Not_A_Namespace"]}`, "params.nodeAccessNamespaces[0]"},
	} {
		var opts sweeper.Options
		err := planeAsInstalled(&opts, tc.profile, tc.params)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--profile=%q --params=%q: %v, want an error saying %q", tc.profile, tc.params, err, tc.want)
		}
		if opts.Profile != "" {
			t.Errorf("--profile=%q --params=%q: set the profile though refused", tc.profile, tc.params)
		}
	}
	if err := planeAsInstalled(&opts, "", ""); err != nil {
		t.Errorf("no profile and no params (no backstop): %v", err)
	}
}
