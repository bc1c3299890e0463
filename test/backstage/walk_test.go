package backstage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/relay/client"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

// TestBackstageWalk: Tower's tab and pages in a Backstage app built with
// Backstage's CLI, in Debian's Chromium (test/browser/backstage/walk.js,
// playwright-core), alice and bob each in a browser context of their own,
// signing in at the issuer through Backstage's popup. alice asks from the
// shop component's tab, picking the pod Backstage's Kubernetes plugin lists
// for it; bob approves from the link in his Backstage
// notification; before that she breaks the glass on a copy with process
// access, bob reviews it from his queue, and its recording is refused to
// her and plays for him; alice's terminal shows uid 65532 and a refused write; bob
// watches read-only and his keys reach nothing; alice ends; the recording
// plays, its hashes as the evidence has them. axe-core checks each page.
func TestBackstageWalk(t *testing.T) {
	prereq.Need(t, prereq.Browser...)
	_, here, _, _ := runtime.Caller(0)
	browserDir := filepath.Join(filepath.Dir(here), "..", "browser")
	artifacts := filepath.Join(browserDir, "artifacts", "backstage")
	if err := os.RemoveAll(artifacts); err != nil {
		t.Fatal(err)
	}
	info, people := plane(t, false)
	cfg, _ := json.Marshal(map[string]any{"backstage": info.BackstageURL, "pod": info.Pod, "artifacts": artifacts})
	out, err := exec.Command("node", filepath.Join(browserDir, "backstage", "walk.js"), string(cfg)).Output()
	if err != nil {
		t.Fatalf("driving Chromium: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var r struct {
		OK         bool                `json:"ok"`
		Error      string              `json:"error"`
		PageErrors map[string][]string `json:"pageErrors"`
		A11y       []map[string]any    `json:"a11y"`
		Checked    []string            `json:"checked"`
		Facts      struct {
			Session, ApprovalLink, AliceScreen, UID string
			PodChoices                              []string
			Timers                                  string
			BobsTypingReached                       bool
			Hashes                                  []string
			Glass                                   struct {
				Session, AliceRecording string
				Reviewed                bool
			}
		} `json:"facts"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("the walk said: %s", out)
	}
	if !r.OK {
		t.Fatalf("the walk failed (screenshots in %s): %s", artifacts, r.Error)
	}
	for who, errs := range r.PageErrors {
		if len(errs) > 0 {
			t.Errorf("%s's pages logged errors: %q", who, errs)
		}
	}
	if len(r.A11y) > 0 || len(r.Checked) < 8 {
		t.Errorf("axe-core on %q: %v", r.Checked, r.A11y)
	}
	f := r.Facts
	if want := fmt.Sprintf("/break-glass/sessions/%s/%s/%s?view=approve", info.Cluster, info.Namespace, f.Session); f.ApprovalLink != want {
		t.Errorf("bob's notification links to %q, want %q", f.ApprovalLink, want)
	}
	if f.UID != "65532" || !strings.Contains(f.AliceScreen, "write-refused-42") {
		t.Errorf("alice's terminal: uid %q, screen %q", f.UID, f.AliceScreen)
	}
	if !strings.Contains(f.Glass.AliceRecording, "do not let user:default/alice play the recording") || !f.Glass.Reviewed {
		t.Errorf("the broken glass: alice's recording %q, reviewed by bob %v", f.Glass.AliceRecording, f.Glass.Reviewed)
	}
	// The pods offered are the component's, as Backstage's Kubernetes
	// plugin found them: the walk's pod among them, and nothing else.
	if !slices.Contains(f.PodChoices, info.Pod) || len(f.PodChoices) != 2 {
		t.Errorf("the tab offered %q, want a prompt and %s", f.PodChoices, info.Pod)
	}
	if !strings.Contains(f.Timers, "Idle limit in") {
		t.Errorf("alice's timers: %q", f.Timers)
	}
	if f.BobsTypingReached {
		t.Error("what bob typed while watching reached alice's shell")
	}
	// The page's hashes are the evidence's: the cast's, computed in the
	// browser, and the manifest's the relay recorded.
	bob := people["bob"].Client(info.BackstageURL, "")
	target := client.Target{Cluster: info.Cluster, Namespace: info.Namespace, Name: f.Session}
	s, err := bob.Get(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	cast, err := bob.Recording(context.Background(), target, "cast")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cast)
	if len(f.Hashes) != 2 || f.Hashes[0] != hex.EncodeToString(sum[:]) || s.Status.Evidence == nil || f.Hashes[1] != s.Status.Evidence.ManifestSHA256 {
		t.Errorf("the page showed %q; the cast's SHA-256 is %x, the manifest's %+v", f.Hashes, sum, s.Status.Evidence)
	}
}
