// Package console_test walks every feature of the web console in a real
// browser (Debian's Chromium, driven by playwright-core) with the people of
// `make dev`, against one relay serving a Flight and a Ground cluster, then
// checks what the pages showed against the evidence on disk and in Rekor.
package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/tower-dev/breakglass/internal/dev"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

// walkResult is what walk.js saw.
type walkResult struct {
	OK         bool                `json:"ok"`
	Error      string              `json:"error"`
	PageErrors map[string][]string `json:"pageErrors"`
	// A11y are axe-core's WCAG 2.1 A/AA findings on the Checked pages.
	A11y []struct {
		Page, ID, Impact, Help string
		Nodes                  []string
	} `json:"a11y"`
	Checked []string `json:"checked"`
	Facts   struct {
		Flight struct {
			WatcherSaw, AliceSawBobsTyping bool
			Greeting                       string
			LateWatcherSaw                 bool
			AfterBlip, WatcherAfterBlip    bool
			Timers, Session, EndedBy       string
			Denial                         string
			// Moderation is what alice's terminal said alone, then watched.
			Moderation struct{ Alone, Watched string }
			Extension  struct {
				Listed, GrantBefore, GrantAfter string
				MovedBy                         float64
				TypedAfter                      bool
			}
		}
		Ground []struct {
			Mode, Session, Screen, ManifestSHA256, Rekor string
			VerifyHint, Match                            string
			Commands                                     []string
			ProcessAccess                                bool
			Checks                                       []string
		}
		Glass struct {
			Session, AliceReviewBody, Broadcast, Reviewed string
			AliceReviewForm, AliceReviewAPI               int
		}
		Overdue   struct{ Session, To, Link, Reviewed string }
		Sensitive struct {
			RefusedToAlice, AliceRow string
			AliceDownloads           int
			BobChecks                []string
		}
		Dave struct {
			ApproveButtons, ApproveAPI, ReviewAPI int
			ApproveBody, ReviewBody               string
		}
		SignOut struct{ Path, Text, After string }
		Queue   struct{ ShownAfterMs int }
		Missing struct {
			StartError, Ended string
			NeverStarted      int
		}
		CarolHome struct {
			Nav      string
			Headings []string
		}
	} `json:"facts"`
}

func TestConsoleWalk(t *testing.T) {
	prereq.Need(t, append(append(prereq.ControlPlane, prereq.Console), prereq.Browser...)...)
	_, here, _, _ := runtime.Caller(0)
	browserDir := filepath.Join(filepath.Dir(here), "..", "browser")
	artifacts := filepath.Join(browserDir, "artifacts", "walk")
	if err := os.RemoveAll(artifacts); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	var logs cluster.SyncBuffer
	running, err := dev.Background(context.Background(), dev.Options{Profile: policies.Flight, Both: true, Rekor: true, ReviewWithin: 20 * time.Second,
		Moderated: []string{"shop"},
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
	cfg, _ := json.Marshal(map[string]any{"relay": info.RelayURL, "notifications": info.Notifications, "artifacts": artifacts, "pods": pods})

	t.Run("cookie from another origin", func(t *testing.T) { crossOrigin(t, info) })

	out, err := exec.Command("node", filepath.Join(browserDir, "walk", "walk.js"), string(cfg)).Output()
	if err != nil {
		t.Fatalf("driving Chromium: %v\n%s\n%s", err, out, logs.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var r walkResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("the walk said: %s", out)
	}
	if !r.OK {
		t.Fatalf("the walk failed (screenshots in %s): %s\n%s", artifacts, r.Error, logs.String())
	}
	for who, errs := range r.PageErrors {
		if len(errs) > 0 {
			t.Errorf("%s's pages logged errors (a CSP violation shows here): %q", who, errs)
		}
	}
	f := r.Facts

	t.Run("accessible", func(t *testing.T) {
		if len(r.Checked) < 9 {
			t.Errorf("axe-core checked only %q", r.Checked)
		}
		for _, v := range r.A11y {
			t.Errorf("%s: %s (%s): %s, at %q", v.Page, v.ID, v.Impact, v.Help, v.Nodes)
		}
	})

	t.Run("flight with two people", func(t *testing.T) {
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
		case f.Flight.Denial != "Denied by bob@example.com: not during the freeze":
			t.Errorf("alice read %q", f.Flight.Denial)
		}
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
		execRefused(t, info)
	})

	t.Run("ground: copy, held copy, live with process access", func(t *testing.T) {
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
			if len(g.Checks) != 2 || strings.Contains(strings.Join(g.Checks, ""), "✗") {
				t.Errorf("%s: the page's checks: %q", g.Mode, g.Checks)
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
			manifestOnDisk(t, state, "ground", g.Session, g.ManifestSHA256)
			inRekor(t, info.RekorURL, g.Rekor, g.ManifestSHA256)
		}
	})

	t.Run("glass broken", func(t *testing.T) {
		g := f.Glass
		switch {
		case g.Broadcast != "everyone":
			t.Errorf("the broken glass was told to %q", g.Broadcast)
		case g.AliceReviewForm != 0 || g.AliceReviewAPI != http.StatusForbidden:
			t.Errorf("alice, its requester: %d review forms, the API answered %d %s", g.AliceReviewForm, g.AliceReviewAPI, g.AliceReviewBody)
		case g.Reviewed != "Reviewed by bob@example.com: “checked the recording: only reads”":
			t.Errorf("after bob's review: %q", g.Reviewed)
		}
		o := f.Overdue
		if o.To != dev.FallbackReviewer || !strings.HasSuffix(o.Link, "/console/sessions/flight/shop/"+o.Session+"/review") ||
			!strings.HasPrefix(o.Reviewed, "Reviewed by carol@example.com") {
			t.Errorf("the overdue review: %+v", o)
		}
	})

	t.Run("only what each person may do", func(t *testing.T) {
		c := f.CarolHome
		if strings.Contains(c.Nav, "Request a session") || !slices.Equal(c.Headings, []string{"Overdue reviews", "Reviews due"}) {
			t.Errorf("carol, who only reviews, is offered %q and shown %q", c.Nav, c.Headings)
		}
	})

	t.Run("queues current", func(t *testing.T) {
		// The walk waited at most 10 s; the figure is for the log.
		if f.Queue.ShownAfterMs <= 0 {
			t.Errorf("bob's queue: %+v", f.Queue)
		}
		t.Logf("a new request reached bob's open queue %d ms after dave asked", f.Queue.ShownAfterMs)
	})

	t.Run("a pod that is not there", func(t *testing.T) {
		m := f.Missing
		if !strings.Contains(m.StartError, `"gone-since" not found`) || !strings.Contains(m.StartError, "withdraw this request") ||
			!strings.Contains(m.Ended, "Ended by alice@example.com, the requester: “wrong pod”") || m.NeverStarted != 1 {
			t.Errorf("%+v", m)
		}
	})

	t.Run("sign out", func(t *testing.T) {
		s := f.SignOut
		if s.Path != "/auth/signed-out" || !strings.Contains(s.Text, "You are signed out") || strings.HasPrefix(s.After, info.RelayURL) {
			t.Errorf("dave signed out and landed on %s (%q); the console next sent him to %s, not the issuer", s.Path, s.Text, s.After)
		}
	})

	t.Run("sensitive recording", func(t *testing.T) {
		s := f.Sensitive
		if !strings.Contains(s.RefusedToAlice, "sensitive") || len(s.BobChecks) != 2 || strings.Contains(strings.Join(s.BobChecks, ""), "✗") {
			t.Errorf("%+v", s)
		}
		// The list: marked, what bob granted (live with processes), and no
		// link for alice to a recording she may not open.
		if s.AliceDownloads != 0 || !strings.Contains(s.AliceRow, "sensitive") || !strings.Contains(s.AliceRow, "live + processes") ||
			!strings.Contains(s.AliceRow, "not yours to view") {
			t.Errorf("alice's view of the sensitive recording: %d download links; its row %q", s.AliceDownloads, s.AliceRow)
		}
	})

	t.Run("never one's own", func(t *testing.T) {
		d := f.Dave
		if d.ApproveButtons != 0 || d.ApproveAPI != http.StatusForbidden || !strings.Contains(d.ApproveBody, "another person decides") ||
			d.ReviewAPI != http.StatusForbidden || !strings.Contains(d.ReviewBody, "another person reviews") {
			t.Errorf("%+v", d)
		}
	})
}

// manifestOnDisk: the hash the page showed is the manifest's in the
// recording directory, and that manifest is this session's.
func manifestOnDisk(t *testing.T, state, cluster, session, shown string) {
	t.Helper()
	found := false
	root := filepath.Join(state, "recordings")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "manifest.json" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != shown {
			return nil
		}
		var m struct{ Cluster, Name string }
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		found = m.Cluster == cluster && m.Name == session
		return nil
	})
	if err != nil || !found {
		t.Errorf("no manifest of %s/%s with SHA-256 %s under %s (%v)", cluster, session, shown, root, err)
	}
}

// inRekor: the entry the page named is in the log, over the manifest's hash.
func inRekor(t *testing.T, rekorURL, shown, sha string) {
	t.Helper()
	m := regexp.MustCompile(`^entry ([0-9a-f]+) at index ([0-9]+)$`).FindStringSubmatch(shown)
	if m == nil {
		t.Fatalf("the page's Rekor entry: %q", shown)
	}
	resp, err := http.Get(rekorURL + "/api/v1/log/entries?logIndex=" + m[2])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var entries map[string]struct{ Body string }
	if err := json.NewDecoder(resp.Body).Decode(&entries); err != nil {
		t.Fatal(err)
	}
	for uuid, e := range entries {
		body, _ := base64.StdEncoding.DecodeString(e.Body)
		if !strings.HasSuffix(m[1], uuid) && !strings.HasSuffix(uuid, m[1]) {
			t.Errorf("index %s holds %s, the page said %s", m[2], uuid, m[1])
		}
		if !strings.Contains(string(body), sha) {
			t.Errorf("the entry at index %s is not over %s: %s", m[2], sha, body)
		}
		return
	}
	t.Errorf("no entry at index %s", m[2])
}

// execRefused: exec through the Flight API server is refused, to a
// cluster admin too.
func execRefused(t *testing.T, info dev.Info) {
	t.Helper()
	var flight dev.ClusterInfo
	for _, c := range info.Clusters {
		if c.Profile == policies.Flight {
			flight = c
		}
	}
	rc, err := clientcmd.BuildConfigFromFlags("", flight.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	req := kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(info.Namespace).Name(flight.Pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "web", Command: []string{"id"}, Stdout: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(rc, "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "[exec.never]") {
		t.Errorf("exec on Flight as a cluster admin: %v, want the no-exec policy's refusal", err)
	}
}

// crossOrigin: the console's cookie is good from the console's own page
// only: the same call with another site's Origin, or with no sign that a
// browser made it on the relay's origin, is refused.
func crossOrigin(t *testing.T, info dev.Info) {
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
