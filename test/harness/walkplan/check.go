package walkplan

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/localplane"
)

// FrontEnd is what differs, by design, between the two front ends' walks.
type FrontEnd struct {
	Name string
	// SessionPage is a session's page in this front end, with a view
	// (approve, review) where a notification links to one.
	SessionPage func(cluster, ns, name, view string) string
	// ChecksPods: the front end reads the target's pods (Backstage's
	// Kubernetes view), so a pod that is not there is refused at the
	// request; the console cannot, and the start says so.
	ChecksPods bool
	// MinChecked is how many pages axe-core must have checked.
	MinChecked int
}

// Check holds what the walk saw to the spec's test plan. state is the
// local plane's folder (its recordings); info says where Rekor and the
// clusters are.
func Check(t *testing.T, fe FrontEnd, r Result, info localplane.Info, state string) {
	t.Helper()
	for who, errs := range r.PageErrors {
		if len(errs) > 0 {
			t.Errorf("%s's pages logged errors (a CSP violation shows here): %q", who, errs)
		}
	}
	f := r.Facts
	t.Run("accessible", func(t *testing.T) {
		if len(r.Checked) < fe.MinChecked {
			t.Errorf("axe-core checked only %q", r.Checked)
		}
		for _, v := range r.A11y {
			t.Errorf("%s: %s (%s): %s, at %q", v.Page, v.ID, v.Impact, v.Help, v.Nodes)
		}
	})
	t.Run("flight with two people", func(t *testing.T) { flight(t, fe, f, info) })
	t.Run("the approver sees and chooses what is granted", func(t *testing.T) {
		if want := fe.SessionPage("flight", "shop", f.Flight.Session, "approve"); !strings.HasSuffix(f.ApprovalLink, want) {
			t.Errorf("bob's notification links to %q, want %q", f.ApprovalLink, want)
		}
		a := f.ApprovalPage
		if !strings.Contains(a.Offers, "Keep the pod afterwards") || !strings.Contains(a.Offers, "Reason to deny") ||
			!strings.Contains(a.Decided, "Approved by bob@example.com: mode Live, process access no, keep the pod yes (“keep it for the postmortem”)") {
			t.Errorf("the approval page offered %q; after the decision it said %q", a.Offers, a.Decided)
		}
	})
	t.Run("a second tab", func(t *testing.T) {
		s := f.SecondTab
		if !strings.Contains(s.Elsewhere, "open in another tab or window") || !strings.Contains(s.Moved, "moved to another tab or window") || !s.Typed {
			t.Errorf("%+v", s)
		}
	})
	t.Run("ground: copy, held copy, live with process access", func(t *testing.T) { ground(t, f, info, state) })
	t.Run("glass broken", func(t *testing.T) {
		g := f.Glass
		switch {
		case g.Broadcast != "everyone":
			t.Errorf("the broken glass was told to %q", g.Broadcast)
		case g.AliceReviewForm != 0 || g.AliceReviewAPI != http.StatusForbidden:
			t.Errorf("alice, its requester: %d review forms, the API answered %d %s", g.AliceReviewForm, g.AliceReviewAPI, g.AliceReviewBody)
		case g.Reviewed != "Reviewed by bob@example.com: “checked the recording: only reads”":
			t.Errorf("after bob's review: %q", g.Reviewed)
		case !strings.Contains(g.ReviewLink, fe.SessionPage("flight", "shop", g.Session, "review")):
			t.Errorf("bob was told of the broken glass with the link %q", g.ReviewLink)
		}
		o := f.Overdue
		if o.To != localplane.FallbackReviewer || !strings.HasSuffix(o.Link, fe.SessionPage("flight", "shop", o.Session, "")+"/review") ||
			!strings.HasPrefix(o.Reviewed, "Reviewed by carol@example.com") {
			t.Errorf("the overdue review: %+v", o)
		}
	})
	t.Run("a glass broken and never used", func(t *testing.T) {
		e := f.Expired
		if !strings.HasPrefix(e.Outcome, "Expired: approved, but never started") || e.AliceReviewForm != 0 ||
			e.Reviewed != "Reviewed by bob@example.com: “never used: the site came back by itself”" {
			t.Errorf("the expired glass-broken session: %+v", e)
		}
	})
	t.Run("only what each person may do", func(t *testing.T) {
		c := f.CarolHome
		if c.MayRequest || !slices.Equal(c.Headings, []string{"Reviews due"}) {
			t.Errorf("carol, who only reviews, may ask for sessions %v and is shown %q", c.MayRequest, c.Headings)
		}
	})
	t.Run("queues current", func(t *testing.T) {
		// The walk waited at most 10 s; the figure is for the log.
		if f.Queue.ShownAfterMs <= 0 {
			t.Errorf("bob's queue: %+v", f.Queue)
		}
		t.Logf("%s: a new request reached bob's open queue %d ms after dave asked", fe.Name, f.Queue.ShownAfterMs)
	})
	t.Run("a pod that is not there", func(t *testing.T) {
		m := f.Missing
		if fe.ChecksPods {
			if m.RequestStatus != http.StatusNotFound || !strings.Contains(m.RequestBody, "no pod gone-since of shop runs on flight now") {
				t.Errorf("the request for a pod that is not there: %d %s", m.RequestStatus, m.RequestBody)
			}
			return
		}
		if m.RequestStatus != http.StatusCreated || !strings.Contains(m.StartError, `"gone-since" not found`) || !strings.Contains(m.StartError, "withdraw this request") ||
			m.Ended != "Withdrawn by alice@example.com before it started: “wrong pod”. Nothing ran." || m.NeverStarted != 1 {
			t.Errorf("%+v", m)
		}
	})
	t.Run("sensitive recording", func(t *testing.T) {
		s := f.Sensitive
		if !strings.Contains(s.RefusedToAlice, "sensitive") || len(s.BobChecks) != 2 || strings.Contains(strings.Join(s.BobChecks, ""), "✗") {
			t.Errorf("%+v", s)
		}
		// The list: marked, what bob granted (live with processes), and no
		// link for alice to a recording she may not open.
		if s.AliceDownloads != 0 || !strings.Contains(s.AliceRow, "sensitive") || !strings.Contains(s.AliceRow, "Live + processes") ||
			!strings.Contains(s.AliceRow, "not yours to view") {
			t.Errorf("alice's view of the sensitive recording: %d downloads; its row %q", s.AliceDownloads, s.AliceRow)
		}
	})
	t.Run("never one's own", func(t *testing.T) {
		d := f.Dave
		if d.ApproveButtons != 0 || d.ApproveAPI != http.StatusForbidden || !strings.Contains(d.ApproveBody, "another person decides") ||
			d.ReviewAPI != http.StatusForbidden || !strings.Contains(d.ReviewBody, "another person reviews") {
			t.Errorf("%+v", d)
		}
	})
	t.Run("sign out", func(t *testing.T) {
		if !f.SignOut.SignedOut {
			t.Errorf("dave signed out: %+v", f.SignOut)
		}
	})
}

func flight(t *testing.T, fe FrontEnd, f Facts, info localplane.Info) {
	switch {
	case !f.Flight.WatcherSaw:
		t.Error("bob, watching, did not see alice's output")
	case !strings.Contains(f.Flight.Greeting, "press Enter"):
		t.Errorf("alice's terminal, before a key: %q", f.Flight.Greeting)
	case !f.Flight.LateWatcherSaw:
		t.Error("bob, joining late, was not shown the screen he joined")
	case f.Flight.AliceSawBobsTyping:
		t.Error("what bob typed while watching reached the shell")
	case !f.Flight.AfterBlip || !f.Flight.WatcherAfterBlip:
		t.Error("after a network blip, alice's terminal did not reconnect and carry on (or bob stopped seeing it)")
	case !strings.Contains(f.Flight.Timers, "Hard stop in") || !strings.Contains(f.Flight.Timers, "idle limit in") ||
		!strings.Contains(f.Flight.Timers, "terminal open: alice@example.com typing, bob@example.com watching"):
		t.Errorf("timers: %q", f.Flight.Timers)
	case !strings.Contains(f.Flight.EndedBy, "Ended by bob@example.com, an approver: “found it: the payment gateway timeout”"):
		t.Errorf("alice read %q", f.Flight.EndedBy)
	case f.Flight.Denial != "Denied by bob@example.com: not during the freeze.":
		t.Errorf("alice read %q", f.Flight.Denial)
	case !strings.Contains(f.Flight.DenialNotice, "not during the freeze"):
		t.Errorf("alice was told of the denial as %q, not in bob's words", f.Flight.DenialNotice)
	}
	hardStop(t, f)
	if m := f.Flight.Moderation; !strings.HasPrefix(m.Alone, "Input held: moderated session: nobody is watching yet") ||
		!strings.Contains(m.Watched, "moderated: bob@example.com") {
		t.Errorf("alice's terminal in a moderated namespace said %q alone and %q watched", m.Alone, m.Watched)
	}
	x := f.Flight.Extension
	switch {
	case !strings.Contains(x.Listed, "15 minutes more asked by alice@example.com") || !strings.Contains(x.Listed, "approved by bob@example.com"):
		t.Errorf("alice's page lists the extension as %q", x.Listed)
	case x.MovedBy != 15*60:
		t.Errorf("the hard stop moved by %gs, want 900", x.MovedBy)
	case x.GrantBefore == x.GrantAfter || x.GrantAfter != x.GrantBefore+"-x1":
		t.Errorf("the grant %q was replaced by %q", x.GrantBefore, x.GrantAfter)
	case !x.TypedAfter:
		t.Error("alice's terminal did not go on after the extension")
	}
	ExecRefused(t, info)
	t.Logf("%s: start to the terminal's first word %d ms", fe.Name, f.StartToHeldMs)
}

// hardStop: the page counts down to the session's hard stop (its
// deadline), not to its grant's expiry, which the sweeper's grace makes
// later.
func hardStop(t *testing.T, f Facts) {
	m := regexp.MustCompile(`Hard stop in (\d+)m (\d+)s`).FindStringSubmatch(f.Flight.Timers)
	deadline, err1 := time.Parse(time.RFC3339, f.Flight.Deadline)
	grant, err2 := time.Parse(time.RFC3339, f.Flight.GrantExpires)
	if m == nil || err1 != nil || err2 != nil {
		t.Errorf("the hard stop: timers %q, deadline %q, grant %q", f.Flight.Timers, f.Flight.Deadline, f.Flight.GrantExpires)
		return
	}
	mins, _ := strconv.Atoi(m[1])
	secs, _ := strconv.Atoi(m[2])
	shown := time.Duration(mins)*time.Minute + time.Duration(secs)*time.Second
	at := time.UnixMilli(f.Flight.TimersAt)
	if d := deadline.Sub(at) - shown; d < -5*time.Second || d > 5*time.Second || grant.Sub(deadline) < 30*time.Second {
		t.Errorf("the page counted %s to the hard stop at %s; the deadline is %s and the grant's expiry %s", shown, at, deadline, grant)
	}
}

func ground(t *testing.T, f Facts, info localplane.Info, state string) {
	if len(f.Ground) != 3 {
		t.Fatalf("%d ground sessions", len(f.Ground))
	}
	for _, g := range f.Ground {
		for _, want := range []string{"uid=65532", "serviceaccount': No such file or directory", "cannot touch '/probe-2'", "checked-42"} {
			if !strings.Contains(g.Screen, want) {
				t.Errorf("%s: no %q on the screen:\n%s", g.Mode, want, g.Screen)
			}
		}
		if g.ProcessAccess {
			continue
		}
		if len(g.Checks) != 2 || strings.Contains(strings.Join(g.Checks, ""), "✗") || !strings.Contains(g.Checks[0], "the one the transparency log holds") {
			t.Errorf("%s: the page's checks: %q", g.Mode, g.Checks)
		}
		if g.ManifestLabel != "Manifest SHA-256 (anchored in the log)" {
			t.Errorf("%s: the manifest's hash is labelled %q", g.Mode, g.ManifestLabel)
		}
		// Anchored: the relay signed it, so the hint pins its key and the log's.
		if !strings.Contains(g.VerifyHint, "--session session.yaml --key relay.pub --rekor-public-key rekor.pub") ||
			!strings.Contains(g.VerifyHint, "kubectl get session "+g.Session+" -n shop -o yaml") {
			t.Errorf("%s: the verify hint: %q", g.Mode, g.VerifyHint)
		}
		if want := "id; ls /var/run/secrets/kubernetes.io/serviceaccount; touch /probe-$((1+1)); echo checked-$((40+2))"; !slices.Contains(g.Commands, want) {
			t.Errorf("%s: what was typed shows %q, not %q", g.Mode, g.Commands, want)
		}
		if !strings.Contains(g.Match, "output") || !strings.Contains(g.Match, "checked-42") {
			t.Errorf("%s: the search for checked-42 found %q", g.Mode, g.Match)
		}
		ManifestOnDisk(t, state, "ground", g.Session, g.ManifestSHA256)
		InRekor(t, info.RekorURL, g.Rekor, g.ManifestSHA256)
	}
}
