package backstage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/localplane"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/prereq"
	"github.com/tower-dev/breakglass/test/harness/walkplan"
)

// Tower is Tower's part of the plan: its pages under /break-glass in
// Backstage; it reads the component's pods, so a pod that is not there is
// refused when asked for.
var Tower = walkplan.FrontEnd{
	Name: "backstage",
	SessionPage: func(cluster, ns, name, view string) string {
		p := fmt.Sprintf("/break-glass/sessions/%s/%s/%s", cluster, ns, name)
		if view != "" {
			p += "?view=" + view
		}
		return p
	},
	ChecksPods: true,
	MinChecked: 9,
}

// TestBackstageWalk: the spec's test plan, the console's own
// (test/browser/walk/plan.js, test/harness/walkplan), walked in Tower: a
// Backstage app built with Backstage's CLI, in Debian's Chromium, four
// people each in a browser context of their own signing in at the issuer
// through Backstage's popup, on a Flight and a Ground cluster behind one
// relay. They ask from the shop component's tab, picking the cluster and
// the pod Backstage's Kubernetes view lists; approvers act from their
// Backstage notifications' links; everything the console's walk checks,
// this one checks alike.
func TestBackstageWalk(t *testing.T) {
	prereq.Need(t, prereq.Browser...)
	artifacts := filepath.Join(walkplan.BrowserDir(), "artifacts", "backstage")
	if err := os.RemoveAll(artifacts); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	info, _, logs := plane(t, localplane.Options{Profile: policies.Flight, Both: true, Rekor: true, ReviewWithin: 20 * time.Second, ApprovedFor: walkplan.ApprovedFor,
		Moderated: []string{"shop"}, Dir: state})
	pods := map[string]string{}
	for _, c := range info.Clusters {
		pods[c.Name] = c.Pod
	}
	r := walkplan.Run(t, "backstage/walk.js", map[string]any{"backstage": info.BackstageURL, "notifications": info.Notifications,
		"artifacts": artifacts, "pods": pods}, logs)
	walkplan.Check(t, Tower, r, info, state)
	// The demo as documented: a landing page after sign-in, the sidebar's
	// Break glass and Settings (sign-out), a component's Overview whose cards
	// all render.
	if tour := r.Facts.Tour; tour.Landing != "Tower: break-glass debug access" || !slices.Contains(tour.Nav, "Break glass") ||
		!slices.Contains(tour.Nav, "Settings") || tour.Problems != "" {
		t.Errorf("the app around Tower: %+v", tour)
	}
	// The pods offered are the component's on the cluster asked on, as
	// Backstage's Kubernetes view found them: the walk's pod among them,
	// and nothing else.
	if f := r.Facts; !slices.Contains(f.PodChoices, pods["flight"]) || len(f.PodChoices) != 2 {
		t.Errorf("the tab offered %q, want a prompt and %s", f.PodChoices, pods["flight"])
	}
}
