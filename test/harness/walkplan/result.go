// Package walkplan runs the spec's test plan in a browser (test/browser/walk/
// plan.js) through one front end's adapter, the relay's console or Tower in
// Backstage, and holds what the pages showed to one set of checks: the same
// plan, the same assertions, for both front ends. What differs between them
// by design (their way in, their links, where a missing pod is found) is
// named in a FrontEnd.
package walkplan

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Result is what plan.js saw.
type Result struct {
	OK         bool                `json:"ok"`
	Error      string              `json:"error"`
	PageErrors map[string][]string `json:"pageErrors"`
	// Unauthorized counts each person's answers of 401: a sign-in that ran
	// out under an open page.
	Unauthorized map[string]int `json:"unauthorized"`
	// A11y are axe-core's WCAG 2.1 A/AA findings on the Checked pages.
	A11y []struct {
		Page, ID, Impact, Help string
		Nodes                  []string
	} `json:"a11y"`
	Checked []string `json:"checked"`
	Facts   Facts    `json:"facts"`
}

// Facts are what the plan's steps read off the pages.
type Facts struct {
	// Tour is the front end's own pages: its landing page's heading, its
	// navigation's entries, and any card in error on a component's page.
	Tour struct {
		Landing, Problems string
		Nav               []string
	}
	ApprovalLink  string
	ApprovalPage  struct{ Offers, Decided string }
	StartToHeldMs int
	PodChoices    []string
	Flight        struct {
		WatcherSaw, AliceSawBobsTyping bool
		Greeting                       string
		LateWatcherSaw                 bool
		AfterBlip, WatcherAfterBlip    bool
		Timers, Session, EndedBy       string
		TimersAt                       int64
		Deadline, GrantExpires         string
		Denial, DenialNotice           string
		// Moderation is what alice's terminal said alone, then watched.
		Moderation struct{ Alone, Watched string }
		Extension  struct {
			Listed, GrantBefore, GrantAfter string
			MovedBy                         float64
			TypedAfter                      bool
		}
	}
	SecondTab struct {
		Elsewhere, Moved string
		Typed            bool
	}
	Ground []struct {
		Mode, Session, Screen, ManifestSHA256, ManifestLabel, Rekor string
		VerifyHint, Match                                           string
		Commands                                                    []string
		ProcessAccess                                               bool
		Checks                                                      []string
	}
	Glass struct {
		Session, AliceReviewBody, Broadcast, Reviewed, ReviewLink string
		AliceReviewForm, AliceReviewAPI                           int
	}
	Overdue struct{ Session, To, Link, Reviewed string }
	// Expired is the glass broken and never started, once the sweeper
	// expired it: its page's outcome, alice's review forms, bob's review.
	Expired struct {
		Session, Outcome, Reviewed string
		AliceReviewForm            int
	}
	Sensitive struct {
		RefusedToAlice, AliceRow string
		AliceDownloads           int
		BobChecks                []string
	}
	Dave struct {
		ApproveButtons, ApproveAPI, ReviewAPI int
		ApproveBody, ReviewBody               string
	}
	SignOut struct {
		Path, Text, After string
		SignedOut         bool
	}
	Queue   struct{ ShownAfterMs int }
	Missing struct {
		RequestStatus           int
		RequestBody, StartError string
		Ended                   string
		NeverStarted            int
	}
	CarolHome struct {
		MayRequest bool
		Headings   []string
	}
}

// ApprovedFor is how long the walks' plane lets an approved session wait
// for its start: the plan's glass broken and never used expires while the
// rest of the plan runs, and every other session starts at once.
const ApprovedFor = 45 * time.Second

// BrowserDir is test/browser, where the walks and their artifacts are.
func BrowserDir() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "browser")
}

// Run runs script (relative to test/browser) with cfg in Debian's Chromium
// and answers what it saw; a walk that could not finish fails the test,
// naming its screenshots.
func Run(t *testing.T, script string, cfg map[string]any, logs func() string) Result {
	t.Helper()
	raw, _ := json.Marshal(cfg)
	out, err := exec.Command("node", filepath.Join(BrowserDir(), script), string(raw)).Output()
	if err != nil {
		t.Fatalf("driving Chromium: %v\n%s\n%s", err, out, logs())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var r Result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("the walk said: %s", out)
	}
	if !r.OK {
		t.Fatalf("the walk failed (screenshots in %s): %s\n%s", cfg["artifacts"], r.Error, logs())
	}
	return r
}
