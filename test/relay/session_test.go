package relay_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/relay/terminal"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestTwoPersonSession: alice requests, cannot approve herself (neither
// through the relay nor by writing the Session), bob approves; alice starts,
// types in the browser terminal and resizes it, bob watches read-only, a
// second terminal for alice is refused; alice ends. Afterwards: no grant,
// the pod recycled, the recording holds exactly what was typed and shown,
// every step audited and notified.
func TestTwoPersonSession(t *testing.T) {
	ns := cl.Namespace(t, "relay-two-person")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	ctx := context.Background()

	s := tr.request(t, alice, ns, "web-1", "")
	if s.Status.Phase != v1alpha1.PhasePending || s.Spec.Requester != alice.Email {
		t.Fatalf("the request: %+v", s)
	}
	path := sessionPath(ns, s.Name)
	if a := tr.must(t, http.StatusForbidden, token(t, alice), "POST", path+"/approve", `{}`); a.errorReason() != "Forbidden" {
		t.Fatalf("alice approving her own session: %s", a.body)
	}
	if a := tr.must(t, http.StatusConflict, token(t, alice), "POST", path+"/start", ""); !strings.Contains(string(a.body), "not Approved") {
		t.Fatalf("starting unapproved: %s", a.body)
	}
	// The portal's identity writing alice's approval straight to the
	// Session: the cluster's own policy refuses it.
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	direct := &v1alpha1.Session{}
	if err := portal.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.Name}, direct); err != nil {
		t.Fatal(err)
	}
	direct.Status.Phase = v1alpha1.PhaseApproved
	direct.Status.Approval = &v1alpha1.Approval{By: alice.Email, At: metav1.Now(), Mode: v1alpha1.ModeLive}
	if err := portal.Client.Status().Update(ctx, direct); err == nil || !strings.Contains(err.Error(), "session.self-approval") {
		t.Fatalf("self-approval written to the Session: %v", err)
	}

	approved := tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/approve", `{"comment":"go ahead"}`).session(t)
	if approved.Status.Approval == nil || approved.Status.Approval.By != bob.Email || approved.Status.Approval.KeepPod {
		t.Fatalf("the approval: %+v", approved.Status.Approval)
	}
	if a := tr.must(t, http.StatusForbidden, token(t, bob), "POST", path+"/start", ""); !strings.Contains(string(a.body), "only the requester") {
		t.Fatalf("bob starting alice's session: %s", a.body)
	}
	started := tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/start", "").session(t)
	if started.Status.Phase != v1alpha1.PhaseActive || started.Status.Grant == nil || started.Status.Grant.Role != v1alpha1.DebugRole {
		t.Fatalf("the start: %+v", started.Status)
	}

	aliceTerm, _, err := tr.dial(t, alice, ns, s.Name, http.Header{"Origin": {"https://tower.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	bobTerm, _, err := tr.dial(t, bob, ns, s.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := tr.dial(t, alice, ns, s.Name, nil)
	if err != nil {
		t.Fatalf("a second terminal for alice: %v", err)
	}
	closedWith(t, second, terminal.CloseElsewhere, "open in another tab or window")
	// The resize and the keystrokes travel on separate streams to the
	// node: ask for the size until the new one has arrived.
	aliceTerm.control(t, `{"type":"resize","cols":101,"rows":33}`)
	typed := ""
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(aliceTerm.output(), "33 101"); time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the resize never reached the terminal: %q", aliceTerm.output())
		}
		aliceTerm.send(t, "stty size\n")
		typed += "stty size\n"
	}
	aliceTerm.send(t, "echo relay-$((6*7)) as $(id -u)\n")
	typed += "echo relay-$((6*7)) as $(id -u)\n"
	uid := v1alpha1.DebugUserID
	if os.Geteuid() != 0 {
		uid = int64(os.Geteuid())
	}
	want := "relay-42 as " + strconv.FormatInt(uid, 10)
	aliceTerm.waitFor(t, want)
	bobTerm.waitFor(t, want)
	// A watcher who joins now is shown the screen so far, unasked.
	late, _, err := tr.dial(t, bob, ns, s.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	late.waitFor(t, want)
	var v wire.SessionView
	if err := json.Unmarshal(tr.must(t, http.StatusOK, token(t, bob), "GET", path, "").body, &v); err != nil || v.Live == nil {
		t.Fatalf("the live view: %v", err)
	}
	if want := []wire.Attached{{Name: alice.Email, Typing: true}, {Name: bob.Email}}; !slices.Equal(v.Live.Attached, want) {
		t.Fatalf("attached: %+v, want %+v", v.Live.Attached, want)
	}
	_ = late.conn.Close()
	bobTerm.send(t, "echo bob-was-here\n")
	select {
	case c := <-bobTerm.controls:
		if !strings.Contains(c, "read-only") {
			t.Fatalf("bob typing: %s", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bob's keystrokes were not refused")
	}

	ended := tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/end", "").session(t)
	if ended.Status.Phase != v1alpha1.PhaseEnded || ended.Status.End.Reason != v1alpha1.EndUser || ended.Status.End.By != alice.Email {
		t.Fatalf("the end: %+v", ended.Status)
	}
	for _, tm := range []*term{aliceTerm, bobTerm} {
		select {
		case err := <-tm.closed:
			if !websocket.IsCloseError(err, terminal.CloseEnded) {
				t.Fatalf("the terminal closed with %v, want the session's end", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the terminal stayed open after the end")
		}
	}
	assertNothingLeft(t, ns, s.Name, "web-1", false)

	// The recording: what alice typed, byte for byte; what she saw, in it.
	prefix := prefixOf(t, ns, s.Name)
	manifest, err := tr.store.Get(ctx, prefix+recording.ManifestFile, "")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(manifest)
	if ended.Status.Evidence == nil || ended.Status.Evidence.ManifestSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatal("the Session's evidence does not name the manifest's hash")
	}
	in, out, resizes := cluster.Transcript(t, tr.store, prefix)
	if in != typed {
		t.Fatalf("recorded input %q, typed %q", in, typed)
	}
	if !strings.Contains(out, aliceTerm.output()) || !strings.Contains(out, want) {
		t.Fatalf("the recorded output does not hold what alice saw")
	}
	if !slices.Equal(resizes, []string{"101x33"}) {
		t.Fatalf("recorded resizes %v", resizes)
	}
	if got, _, err := recording.VerifyDir(tr.store.Root + "/" + prefix); err != nil || got != ended.Status.Evidence.ManifestSHA256 {
		t.Fatalf("the recording does not verify: %v", err)
	}

	n, err := audit.Verify(strings.NewReader(tr.audit.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{`"kind":"request","actor":"alice@`, `"kind":"approve","actor":"bob@`, `"kind":"grant"`,
		`"kind":"attach","actor":"alice@`, `"kind":"attach","actor":"bob@`, `"kind":"end","actor":"alice@`, `"kind":"refusal","actor":"alice@`} {
		if !strings.Contains(tr.audit.String(), step) {
			t.Errorf("no audit event %s in %d events", step, n)
		}
	}
	notes := tr.notes.kinds(s.Name)
	for _, want := range []string{"request.new approvers", "request.approved " + alice.Email, "session.started approvers", "session.ended " + alice.Email} {
		if !slices.Contains(notes, want) {
			t.Errorf("no notification %q in %v", want, notes)
		}
	}
}

// prefixOf is where the test relay (cluster "prod") keeps the recording
// of the Session ns/name.
func prefixOf(t testing.TB, ns, name string) string {
	t.Helper()
	s := &v1alpha1.Session{}
	if err := cl.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return recording.RefOf("prod", s).Prefix()
}

// assertNothingLeft: no grant for the session, the pod recycled or kept.
func assertNothingLeft(t testing.TB, ns, session, pod string, kept bool) {
	t.Helper()
	ctx := context.Background()
	grants := &rbacv1.RoleBindingList{}
	if err := cl.Client.List(ctx, grants, client.InNamespace(ns), client.MatchingLabels{v1alpha1.SessionLabel: session}); err != nil || len(grants.Items) != 0 {
		t.Fatalf("grants left: %d, %v", len(grants.Items), err)
	}
	recycled := func() (bool, error) {
		p := &corev1.Pod{}
		err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, p)
		return apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil), err
	}
	if kept {
		if gone, _ := recycled(); gone {
			t.Fatal("the pod was recycled although keeping it was approved")
		}
		return
	}
	cluster.Eventually(t, 20*time.Second, "the pod recycled", recycled)
}

// recordedOutput reads an ended session's recording through its manifest
// (every file checked against its hash): what the terminal showed, with
// "<MARKER reason>" where a relay took the session up, and the manifest.
func recordedOutput(t testing.TB, store recording.Store, s *v1alpha1.Session) (string, recording.Manifest) {
	t.Helper()
	ctx := context.Background()
	m, _, err := recording.ReadManifest(ctx, store, recording.RefOf("prod", s), s.Status.Evidence)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := recording.ReadFile(ctx, store, recording.RefOf("prod", s), m, recording.TranscriptFile)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := recording.ReadTranscript(raw)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, r := range recs {
		switch r.Kind {
		case recording.KindMarker:
			out.WriteString("<MARKER " + string(r.Data) + ">")
		case recording.KindOutput:
			out.Write(r.Data)
		}
	}
	return out.String(), m
}
