package relay_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"k8s.io/utils/clock"

	"github.com/tower-dev/breakglass/evidence/transcript"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/relay/wire"
)

// TestWhatWasTyped: after a session in which alice corrected a typo with
// Backspace, its approver reads the corrected command with its time,
// finds the output by a search, and finds the session by a namespace
// search; someone who may not review the namespace is refused all three;
// a process-access recording is withheld from a reviewer who may not view
// sensitive ones; every read is audited.
func TestWhatWasTyped(t *testing.T) {
	ns := cl.Namespace(t, "relay-typed")
	cl.RunningPod(t, ns, "web-1")
	cl.RunningPod(t, ns, "web-2") // each session's end recycles its pod
	tr := startRelay(t, config(), clock.RealClock{})
	// Another team's approver: may approve, so may review nothing here.
	olga := oidcissuer.Person{Email: "olga@example.com", Groups: []string{"other-team"}}

	run := func(pod, extra string, typed ...string) string {
		s := tr.started(t, ns, pod, extra)
		path := sessionPath(ns, s.Name)
		term, _, err := tr.dial(t, alice, ns, s.Name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range typed {
			term.send(t, k)
		}
		term.waitFor(t, "typed-42")
		tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/end", "")
		return s.Name
	}
	name := run("web-1", "", "echo typx", "\x7fed-$((40+2))\r")
	path := sessionPath(ns, name)

	var cmds struct{ Commands []transcript.Command }
	if err := json.Unmarshal(tr.must(t, http.StatusOK, token(t, bob), "GET", path+"/recording/commands", "").body, &cmds); err != nil {
		t.Fatal(err)
	}
	if len(cmds.Commands) != 1 || cmds.Commands[0].Line != "echo typed-$((40+2))" || cmds.Commands[0].Uncertain || cmds.Commands[0].At <= 0 {
		t.Fatalf("the commands: %+v", cmds.Commands)
	}
	var found wire.SessionSearch
	if err := json.Unmarshal(tr.must(t, http.StatusOK, token(t, bob), "GET", path+"/recording/search?q=TYPED-42&stream=output", "").body, &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Matches) == 0 || found.Matches[0].Stream != transcript.StreamOutput || !strings.Contains(found.Matches[0].Context, "typed-42") {
		t.Fatalf("the search: %+v", found)
	}

	// A sensitive session: process access, which bob (no viewSensitive) may not play.
	sensitive := run("web-2", `,"processAccess":true,"container":"web"`, "echo typed-$((40+2))\r")
	nsSearch := "/api/v1/clusters/prod/namespaces/" + ns + "/recordings/search?q=" + url.QueryEscape("typed-42")
	var all wire.RecordingSearch
	if err := json.Unmarshal(tr.must(t, http.StatusOK, token(t, bob), "GET", nsSearch, "").body, &all); err != nil {
		t.Fatal(err)
	}
	if len(all.Searched) != 1 || all.Searched[0] != name || all.Withheld != 1 || len(all.Results) == 0 || all.Results[0].Session != name {
		t.Fatalf("bob's namespace search (%s withheld): %+v", sensitive, all)
	}
	for _, p := range []string{path + "/recording/commands", path + "/recording/search?q=typed", nsSearch} {
		tr.must(t, http.StatusForbidden, token(t, olga), "GET", p, "")
	}
	tr.must(t, http.StatusBadRequest, token(t, bob), "GET", path+"/recording/search?q=x", "")
	log := tr.audit.String()
	for _, want := range []string{`"kind":"play","actor":"bob@example.com"`, `"kind":"search","actor":"bob@example.com"`} {
		if !strings.Contains(log, want) {
			t.Errorf("no %s in the audit log", want)
		}
	}
}
