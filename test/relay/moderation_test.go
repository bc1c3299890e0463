package relay_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	relayapi "github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestModeratedSession: in a moderated namespace the requester's
// keystrokes reach the shell only while an approver watches. Alone, her
// terminal says input is held and nothing she types runs; a moderator
// joins and what she types runs; he leaves and it is held again. The
// recording marks when moderation started and stopped; the moderator ends
// the session at once without the end permission, which he has nowhere
// that is not moderated.
func TestModeratedSession(t *testing.T) {
	ns := cl.Namespace(t, "relay-moderated")
	other := cl.Namespace(t, "relay-unmoderated")
	cl.RunningPod(t, ns, "web-1")
	cl.RunningPod(t, other, "web-1")
	cfg := config()
	cfg.Clusters[0].Moderated = []string{ns}
	cfg.Permissions = append(cfg.Permissions, relayapi.Permission{Groups: []string{"moderators"}, Namespaces: []string{"*"}, Actions: []relayapi.Action{relayapi.ActionApprove}})
	tr := startRelay(t, cfg, clock.RealClock{})
	mo := oidcissuer.Person{Email: "mo@example.com", Groups: []string{"moderators"}}

	s := tr.started(t, ns, "web-1", "")
	path := sessionPath(ns, s.Name)
	aliceTerm, _, err := tr.dial(t, alice, ns, s.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	nextControl(t, aliceTerm, `"type":"held"`)
	aliceTerm.send(t, "echo alone-$((40+1))\n")
	nextControl(t, aliceTerm, "no moderator is watching")
	var v wire.SessionView
	if err := json.Unmarshal(tr.must(t, http.StatusOK, token(t, alice), "GET", path, "").body, &v); err != nil || v.Live == nil || !v.Live.Moderated || !v.Live.InputHeld {
		t.Fatalf("the live view of a moderated session nobody watches: %+v %v", v.Live, err)
	}

	moTerm, _, err := tr.dial(t, mo, ns, s.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	nextControl(t, aliceTerm, `"type":"moderated"`)
	aliceTerm.send(t, "echo watched-$((40+2))\n")
	aliceTerm.waitFor(t, "watched-42")
	moTerm.waitFor(t, "watched-42")
	if strings.Contains(aliceTerm.output(), "alone-41") {
		t.Fatalf("what alice typed alone reached the shell: %q", aliceTerm.output())
	}

	_ = moTerm.conn.Close()
	nextControl(t, aliceTerm, `"type":"held"`)
	aliceTerm.send(t, "echo left-$((40+3))\n")
	nextControl(t, aliceTerm, "no moderator is watching")

	// mo may not end a session anywhere else, and ends this one at once.
	elsewhere := sessionPath(other, tr.started(t, other, "web-1", "").Name)
	tr.must(t, http.StatusForbidden, token(t, mo), "POST", elsewhere+"/end", "")
	tr.must(t, http.StatusOK, token(t, alice), "POST", elsewhere+"/end", "")
	if _, _, err := tr.dial(t, mo, ns, s.Name, nil); err != nil {
		t.Fatal(err)
	}
	ended := tr.must(t, http.StatusOK, token(t, mo), "POST", path+"/end", `{"reason":"not what was asked for"}`).session(t)
	if ended.Status.End == nil || ended.Status.End.By != mo.Email || ended.Status.End.Reason != v1alpha1.EndApprover {
		t.Fatalf("the moderator's end: %+v", ended.Status.End)
	}
	assertNothingLeft(t, ns, s.Name, "web-1", false)

	stored := &v1alpha1.Session{}
	if err := cl.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: s.Name}, stored); err != nil {
		t.Fatal(err)
	}
	out, _ := recordedOutput(t, tr.store, stored)
	started := strings.Index(out, "<MARKER moderation started: mo@example.com watching")
	stopped := strings.Index(out, "<MARKER moderation stopped: mo@example.com left")
	if started < 0 || stopped < started || strings.Index(out, "watched-42") < started || strings.Index(out, "watched-42") > stopped {
		t.Fatalf("the recording does not mark moderation around what ran: %q", out)
	}
	in, _, _ := cluster.Transcript(t, tr.store, prefixOf(t, ns, s.Name))
	if in != "echo watched-$((40+2))\n" {
		t.Fatalf("the recorded input %q: only what reached the shell", in)
	}
	if log := tr.audit.String(); strings.Count(log, `"kind":"moderation","actor":"mo@example.com"`) != 3 {
		t.Errorf("moderation audited %d times, want 3 (started, stopped, started)", strings.Count(log, `"kind":"moderation"`))
	}
}

// nextControl waits for a control message from the relay holding want,
// reading past others.
func nextControl(t testing.TB, tm *term, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case c := <-tm.controls:
			if strings.Contains(c, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no control message with %q within 20s", want)
		}
	}
}
