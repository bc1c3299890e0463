// Package console_test walks the spec's test plan in the relay's console in
// a real browser (Debian's Chromium, driven by playwright-core) with the
// people of `make dev`, against one relay serving a Flight and a Ground
// cluster, then checks what the pages showed against the evidence on disk
// and in Rekor: the same plan and checks as Tower's walk in Backstage
// (test/harness/walkplan).
package console_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/localplane"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
	"github.com/tower-dev/breakglass/test/harness/walkplan"
)

// Console is the console's part of the plan: its pages under /console/.
var Console = walkplan.FrontEnd{
	Name: "console",
	SessionPage: func(cluster, ns, name, view string) string {
		p := fmt.Sprintf("/console/sessions/%s/%s/%s", cluster, ns, name)
		if view != "" {
			p += "/" + view
		}
		return p
	},
	MinChecked: 9,
}

func TestConsoleWalk(t *testing.T) {
	prereq.Need(t, append(append(prereq.ControlPlane, prereq.Console), prereq.Browser...)...)
	artifacts := filepath.Join(walkplan.BrowserDir(), "artifacts", "walk")
	if err := os.RemoveAll(artifacts); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	var logs cluster.SyncBuffer
	// Tokens that run out in 40 s: each page must renew its sign-in (at
	// least once, during the walk) before its calls and event stream meet
	// a 401.
	running, err := localplane.Background(context.Background(), localplane.Options{Profile: policies.Flight, Both: true, Rekor: true, ReviewWithin: 20 * time.Second, ApprovedFor: walkplan.ApprovedFor,
		Moderated: []string{"shop"}, TokenTTL: 40 * time.Second,
		RelayAddr: "127.0.0.1:0", Dir: state}, &logs)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	t.Log(running.Report())
	info := running.Info
	defer func() {
		if err := running.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
		if _, err := os.Stat(state); !os.IsNotExist(err) {
			t.Errorf("the state folder is left behind: %v", err)
		}
	}()
	pods := map[string]string{}
	for _, c := range info.Clusters {
		pods[c.Name] = c.Pod
	}

	t.Run("cookie from another origin", func(t *testing.T) { crossOrigin(t, info) })

	r := walkplan.Run(t, "walk/console.js", map[string]any{"relay": info.RelayURL, "notifications": info.Notifications, "artifacts": artifacts, "pods": pods},
		logs.String)
	walkplan.Check(t, Console, r, info, state)
	t.Run("signed in throughout", func(t *testing.T) {
		for who, n := range r.Unauthorized {
			if n > 0 {
				t.Errorf("%s's pages were answered 401 %d times: the console let the sign-in run out under an open page", who, n)
			}
		}
	})
	t.Run("the console's own", func(t *testing.T) {
		if tour := r.Facts.Tour; tour.Landing != "Sessions" || !slices.Equal(tour.Nav, []string{"Sessions", "Request a session", "Recordings"}) {
			t.Errorf("alice's console: %+v", tour)
		}
		s := r.Facts.SignOut
		if s.Path != "/auth/signed-out" || !strings.Contains(s.Text, "You are signed out") || strings.HasPrefix(s.After, info.RelayURL) {
			t.Errorf("dave signed out and landed on %s (%q); the console next sent him to %s, not the issuer", s.Path, s.Text, s.After)
		}
	})
}

// crossOrigin: the console's cookie is good from the console's own page
// only: the same call with another site's Origin, or with no sign that a
// browser made it on the relay's origin, is refused.
func crossOrigin(t *testing.T, info localplane.Info) {
	hc := signedIn(t, info.RelayURL, "alice")
	call := func(origin, fetchSite string) int {
		req, _ := http.NewRequest("POST", info.RelayURL+"/api/v1/clusters/flight/namespaces/shop/sessions", strings.NewReader(
			fmt.Sprintf(`{"pod":%q,"mode":"live","duration":"15m","reason":"cross-site"}`, "nothere")))
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if fetchSite != "" {
			req.Header.Set("Sec-Fetch-Site", fetchSite)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		origin, site string
		want         int
	}{
		{"https://evil.example", "cross-site", http.StatusUnauthorized},
		{"", "cross-site", http.StatusUnauthorized},
		{"null", "cross-site", http.StatusUnauthorized},
		{"", "", http.StatusUnauthorized},
		{info.RelayURL, "same-origin", http.StatusCreated},
	} {
		if got := call(c.origin, c.site); got != c.want {
			t.Errorf("Origin %q, Sec-Fetch-Site %q: %d, want %d", c.origin, c.site, got, c.want)
		}
	}
}
