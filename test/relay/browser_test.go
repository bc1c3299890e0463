package relay_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"

	"k8s.io/utils/clock"
)

// TestBrowserTerminal: alice's session in a real browser (Debian's
// Chromium, driven by playwright-core) with xterm.js, as a portal page
// would: the page's origin allowed, the token as a subprotocol, the size
// sent on open, a command typed on the keyboard and its output on the
// screen; the recording holds exactly what was typed.
func TestBrowserTerminal(t *testing.T) {
	prereq.Need(t, prereq.Browser...)
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(here), "..", "browser")
	mux := http.NewServeMux()
	mux.Handle("/xterm/", http.StripPrefix("/xterm/", http.FileServer(http.Dir(filepath.Join(dir, "node_modules", "@xterm", "xterm")))))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(dir, "terminal.html"))
	})
	page := httptest.NewServer(mux)
	defer page.Close()

	cfg := config()
	cfg.AllowedOrigins = append(cfg.AllowedOrigins, page.URL)
	tr := startRelay(t, cfg, clock.RealClock{})
	ns := cl.Namespace(t, "relay-browser")
	cl.RunningPod(t, ns, "web-1")
	s := tr.started(t, ns, "web-1", "")
	path := sessionPath(ns, s.Name)

	ws := "ws" + strings.TrimPrefix(tr.url, "http") + path + "/terminal"
	url := page.URL + "/?ws=" + ws + "&token=" + token(t, alice)
	typed := "stty size; echo browser-$((6*7))"
	out, err := exec.Command("node", filepath.Join(dir, "drive.js"), url, typed, "browser-42").CombinedOutput()
	if err != nil {
		t.Fatalf("driving Chromium: %v\n%s", err, out)
	}
	var result struct {
		OK     bool     `json:"ok"`
		Screen string   `json:"screen"`
		Errors []string `json:"errors"`
		Error  string   `json:"error"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &result); err != nil {
		t.Fatalf("the driver said: %s", out)
	}
	if !result.OK || len(result.Errors) > 0 {
		t.Fatalf("in the browser: %s %v\n%s", result.Error, result.Errors, result.Screen)
	}
	if !strings.Contains(result.Screen, "31 97") {
		t.Fatalf("the browser's terminal size did not reach the pty:\n%s", result.Screen)
	}
	tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/end", "")
	in, _, resizes := cluster.Transcript(t, tr.store, prefixOf(t, ns, s.Name))
	if in != typed+"\r" || len(resizes) == 0 || resizes[0] != "97x31" {
		t.Fatalf("recorded input %q, resizes %v", in, resizes)
	}
	assertNothingLeft(t, ns, s.Name, "web-1", false)
}
