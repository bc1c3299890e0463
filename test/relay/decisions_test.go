package relay_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/relay"
	"github.com/tower-dev/breakglass/relay/terminal"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestDeny: bob denies; the session never starts and nothing is granted.
func TestDeny(t *testing.T) {
	ns := cl.Namespace(t, "relay-deny")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	s := tr.request(t, alice, ns, "web-1", "")
	path := sessionPath(ns, s.Name)
	denied := tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/deny", `{"reason":"use the logs"}`).session(t)
	if denied.Status.Phase != v1alpha1.PhaseDenied || denied.Status.Denial.By != bob.Email || denied.Status.Denial.Reason != "use the logs" {
		t.Fatalf("the denial: %+v", denied.Status)
	}
	tr.must(t, http.StatusConflict, token(t, alice), "POST", path+"/start", "")
	tr.must(t, http.StatusConflict, token(t, bob), "POST", path+"/approve", `{}`)
	assertNothingLeft(t, ns, s.Name, "web-1", true)
	if !slices.Contains(tr.notes.kinds(s.Name), "request.denied "+alice.Email) {
		t.Fatalf("alice was not told: %v", tr.notes.kinds(s.Name))
	}
}

// TestApproverEndsAndKeepsThePod: bob approves with "keep the pod" and
// process access withheld, then ends the session himself.
func TestApproverEndsAndKeepsThePod(t *testing.T) {
	ns := cl.Namespace(t, "relay-keep")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	s := tr.request(t, alice, ns, "web-1", `,"container":"web","processAccess":true`)
	path := sessionPath(ns, s.Name)
	approved := tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/approve", `{"keepPod":true,"withoutProcessAccess":true}`).session(t)
	if a := approved.Status.Approval; !a.KeepPod || a.ProcessAccess {
		t.Fatalf("what bob approved: %+v", a)
	}
	started := tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/start", "").session(t)
	if started.Status.Grant.Role != v1alpha1.DebugRole {
		t.Fatalf("process access was withheld, yet the grant is %s", started.Status.Grant.Role)
	}
	tr.must(t, http.StatusForbidden, token(t, eve), "POST", path+"/end", "")
	tr.must(t, http.StatusBadRequest, token(t, bob), "POST", path+"/end", `{"reason":"`+strings.Repeat("é", 1025)+`"}`)
	// The person's words, kept as they wrote them, quotes and a line break too.
	words := `found it: the "gateway" timeout` + "\nnothing else"
	body, _ := json.Marshal(map[string]string{"reason": words})
	ended := tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/end", string(body)).session(t)
	if e := ended.Status.End; e.Reason != v1alpha1.EndApprover || e.By != bob.Email || e.Note != words {
		t.Fatalf("the end: %+v", ended.Status.End)
	}
	if !strings.Contains(tr.audit.String(), `"reason":"approver: found it: the \"gateway\" timeout\nnothing else"`) {
		t.Fatalf("the audit log lost bob's words:\n%s", tr.audit.String())
	}
	tr.must(t, http.StatusConflict, token(t, bob), "POST", path+"/end", "")
	// A page that read the session Active a moment before its end opens a
	// terminal that closes as ended, not a handshake refused to retry.
	late, _, err := tr.dial(t, bob, ns, s.Name, nil)
	if err != nil {
		t.Fatalf("a terminal after the end: %v, want one that closes as ended", err)
	}
	select {
	case err := <-late.closed:
		if !websocket.IsCloseError(err, terminal.CloseEnded) {
			t.Fatalf("a terminal after the end closed with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a terminal after the end stayed open")
	}
	assertNothingLeft(t, ns, s.Name, "web-1", true)
}

// TestProcessAccessApproved: asked for and approved, process access is the
// process role's grant and the debug container targets the app container.
func TestProcessAccessApproved(t *testing.T) {
	ns := cl.Namespace(t, "relay-process")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	s := tr.started(t, ns, "web-1", `,"container":"web","processAccess":true`)
	path := sessionPath(ns, s.Name)
	if s.Status.Grant.Role != v1alpha1.DebugProcessRole || !s.Status.Approval.ProcessAccess {
		t.Fatalf("the grant: %+v", s.Status)
	}
	tr.must(t, http.StatusConflict, token(t, dana), "GET", path+"/recording", "")
	// bob, watching without viewSensitive, sees what follows his joining,
	// not the screen before it: that is the sensitive recording's.
	aliceTerm, _, err := tr.dial(t, alice, ns, s.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	aliceTerm.send(t, "echo before-$((2+2))\n")
	aliceTerm.waitFor(t, "before-4")
	bobTerm, _, err := tr.dial(t, bob, ns, s.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	aliceTerm.send(t, "echo after-$((3+3))\n")
	bobTerm.waitFor(t, "after-6")
	if strings.Contains(bobTerm.output(), "before") {
		t.Fatalf("bob was shown the sensitive screen from before he joined: %q", bobTerm.output())
	}
	// Gone once he closes it: a watcher who left counts for nothing (in a
	// moderated namespace, he would let alice's keys through).
	_ = bobTerm.conn.Close()
	want := []wire.Attached{{Name: alice.Email, Typing: true}}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var v wire.SessionView
		if err := json.Unmarshal(tr.must(t, http.StatusOK, token(t, alice), "GET", path, "").body, &v); err != nil || v.Live == nil {
			t.Fatalf("the live view: %v", err)
		}
		if v.Live.Viewers == 1 && slices.Equal(v.Live.Attached, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after bob closed his terminal: %d viewers, %+v attached; want alice's alone", v.Live.Viewers, v.Live.Attached)
		}
	}
	tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/end", "")
	assertNothingLeft(t, ns, s.Name, "web-1", false)

	// The recording may show the app's memory: sensitive, refused to
	// whoever lacks viewSensitive, the requester and the approver included.
	for _, p := range []oidcissuer.Person{alice, bob, eve} {
		if a := tr.must(t, http.StatusForbidden, token(t, p), "GET", path+"/recording", ""); p.Email != eve.Email && !strings.Contains(string(a.body), "sensitive") {
			t.Fatalf("%s: %s", p.Email, a.body)
		}
	}
	cast := tr.must(t, http.StatusOK, token(t, dana), "GET", path+"/recording", "")
	if !strings.Contains(strings.SplitN(string(cast.body), "\n", 2)[0], `"version":2`) {
		t.Fatalf("not an asciicast: %.80s", cast.body)
	}
	tr.must(t, http.StatusOK, token(t, dana), "GET", path+"/recording?file=manifest", "")
	tr.must(t, http.StatusBadRequest, token(t, dana), "GET", path+"/recording?file=../../etc/passwd", "")
	if n := strings.Count(tr.audit.String(), `"kind":"play","actor":"dana@`); n != 2 {
		t.Fatalf("%d plays audited, want 2", n)
	}
}

// TestGlassBroken: carol, on call, breaks the glass: no approval, everyone
// told, a review due; she cannot review herself, bob does.
func TestGlassBroken(t *testing.T) {
	ns := cl.Namespace(t, "relay-glass")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	tr.must(t, http.StatusForbidden, token(t, alice), "POST", "/api/v1/clusters/prod/namespaces/"+ns+"/sessions",
		`{"pod":"web-1","mode":"live","duration":"30m","reason":"down","glassBroken":true}`)
	s := tr.request(t, carol, ns, "web-1", `,"glassBroken":true`)
	if s.Status.Phase != v1alpha1.PhaseApproved || s.Status.Approval.Kind != v1alpha1.ApprovalGlassBroken ||
		s.Status.Review == nil || s.Status.Review.DueAt == nil {
		t.Fatalf("the glass-broken session: %+v", s.Status)
	}
	path := sessionPath(ns, s.Name)
	tr.must(t, http.StatusOK, token(t, carol), "POST", path+"/start", "")
	tr.must(t, http.StatusConflict, token(t, bob), "POST", path+"/review", `{"comment":"fine"}`)
	tr.must(t, http.StatusOK, token(t, carol), "POST", path+"/end", "")
	tr.must(t, http.StatusForbidden, token(t, carol), "POST", path+"/review", `{"comment":"all good"}`)
	reviewed := tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/review", `{"comment":"justified: checkout was down"}`).session(t)
	if r := reviewed.Status.Review; r.By != bob.Email || r.At == nil || r.Comment == "" {
		t.Fatalf("the review: %+v", r)
	}
	tr.must(t, http.StatusConflict, token(t, bob), "POST", path+"/review", `{"comment":"again"}`)
	if !slices.Contains(tr.notes.kinds(s.Name), "glass.broken everyone") {
		t.Fatalf("nobody was told the glass was broken: %v", tr.notes.kinds(s.Name))
	}
	assertNothingLeft(t, ns, s.Name, "web-1", false)
}

// TestExpiredGlassReviewedThenDeleted: a glass broken and never used
// expires, as the sweeper writes it. Its record is kept for its review:
// a cluster admin's delete is refused, carol who broke it may not review
// it, bob does, and then the record may go.
func TestExpiredGlassReviewedThenDeleted(t *testing.T) {
	ns := cl.Namespace(t, "relay-glass-expired")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, config(), clock.RealClock{})
	s := tr.request(t, carol, ns, "web-1", `,"glassBroken":true`)
	sweeperUser, err := cl.AsServiceAccount(v1alpha1.Namespace, v1alpha1.SweeperServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	expired := &v1alpha1.Session{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.Name}, expired); err != nil {
		t.Fatal(err)
	}
	expired.Status.Phase = v1alpha1.PhaseExpired
	if err := sweeperUser.Client.Status().Update(ctx, expired); err != nil {
		t.Fatalf("the sweeper's expiry: %v", err)
	}
	admin, err := cl.As("root", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Client.Delete(ctx, expired, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "[session.delete]") {
		t.Fatalf("deleting the unreviewed expired glass: %v, want [session.delete]", err)
	}
	path := sessionPath(ns, s.Name)
	seen := tr.must(t, http.StatusOK, token(t, bob), "GET", path, "").session(t)
	if !slices.Contains(seen.May, wire.OfferReview) {
		t.Fatalf("bob is not offered the review of the expired glass: %v", seen.May)
	}
	tr.must(t, http.StatusForbidden, token(t, carol), "POST", path+"/review", `{"comment":"mine"}`)
	reviewed := tr.must(t, http.StatusOK, token(t, bob), "POST", path+"/review", `{"comment":"broken in error, never used"}`).session(t)
	if reviewed.Status.Review == nil || reviewed.Status.Review.By != bob.Email {
		t.Fatalf("the review: %+v", reviewed.Status.Review)
	}
	if err := admin.Client.Delete(ctx, expired); err != nil {
		t.Fatalf("deleting the reviewed expired glass: %v", err)
	}
}

// TestGroundWithoutApproval: a Ground cluster configured so starts at once;
// a Flight cluster cannot be configured so.
func TestGroundWithoutApproval(t *testing.T) {
	no := false
	cfg := config()
	cfg.Clusters[0].RequireApproval = &no
	if err := cfg.Complete(); err == nil || !strings.Contains(err.Error(), "always requires approval") {
		t.Fatalf("a Flight cluster without approval: %v", err)
	}
	cfg.Clusters[0].Tier = relay.Ground
	ns := cl.Namespace(t, "relay-ground")
	cl.RunningPod(t, ns, "web-1")
	tr := startRelay(t, cfg, clock.RealClock{})
	s := tr.request(t, alice, ns, "web-1", "")
	if s.Status.Phase != v1alpha1.PhaseApproved || s.Status.Approval.Kind != v1alpha1.ApprovalNotRequired {
		t.Fatalf("the request on Ground: %+v", s.Status)
	}
	path := sessionPath(ns, s.Name)
	tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/start", "")
	tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/end", "")
	assertNothingLeft(t, ns, s.Name, "web-1", false)
}

// TestLimitsThroughTheRelay: with the relay's clock moved, a session nobody
// watches ends at the disconnect limit; a browser that reconnects within it
// resumes the session; a session nobody types in ends at the idle limit.
func TestLimitsThroughTheRelay(t *testing.T) {
	ns := cl.Namespace(t, "relay-limits")
	cl.RunningPod(t, ns, "web-1")
	cl.RunningPod(t, ns, "web-2")
	fake := clocktesting.NewFakeClock(time.Now())
	tr := startRelay(t, config(), fake)
	ctx := context.Background()

	start := func(pod string) string { return tr.started(t, ns, pod, "").Name }
	phase := func(name string) *v1alpha1.Session {
		s := &v1alpha1.Session{}
		if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// step moves the clock a second at a time, as the relay's watcher of
	// session name waits for it; it stops early once that session has
	// ended. A watcher slow to come back to the clock (a busy machine) is
	// waited for, not taken for an ended session.
	step := func(name string, d time.Duration) {
		for i := time.Duration(0); i < d; i += time.Second {
			cluster.Eventually(t, 30*time.Second, "the relay's watcher waits on the clock", func() (bool, error) {
				return fake.HasWaiters() || phase(name).Status.Phase == v1alpha1.PhaseEnded, nil
			})
			if phase(name).Status.Phase == v1alpha1.PhaseEnded {
				return
			}
			fake.Step(time.Second)
		}
	}

	// Disconnect: alice opens the terminal, leaves, comes back within the
	// limit and finds her shell; then leaves for good.
	first := start("web-1")
	tm, _, err := tr.dial(t, alice, ns, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	tm.send(t, "export MARK=resumed-$((40+2))\n")
	tm.waitFor(t, "resumed-")
	// Streamed as it goes: within seconds, what was typed is in a locked
	// segment, so a relay that dies now loses nothing of it.
	step(first, 6*time.Second)
	segments, err := tr.store.List(ctx, prefixOf(t, ns, first))
	if err != nil || len(segments) == 0 {
		t.Fatalf("no segment streamed after 6s: %v %v", segments, err)
	}
	if raw, err := tr.store.Get(ctx, segments[len(segments)-1], ""); err != nil || !strings.Contains(string(raw), "export MARK") {
		t.Fatalf("the last segment %s does not hold what was typed: %v", segments[len(segments)-1], err)
	}
	_ = tm.conn.Close()
	step(first, 84*time.Second)
	again, _, err := tr.dial(t, alice, ns, first, nil)
	if err != nil {
		t.Fatalf("reconnecting within the disconnect limit: %v", err)
	}
	again.send(t, "echo $MARK\n")
	again.waitFor(t, "resumed-42")
	_ = again.conn.Close()
	step(first, 2*time.Minute+5*time.Second)
	requireEndedBy(t, ns, first, v1alpha1.EndDisconnect)
	assertNothingLeft(t, ns, first, "web-1", false)

	// Idle: bob watches (so nobody is disconnected), alice never types.
	second := start("web-2")
	watcher, _, err := tr.dial(t, bob, ns, second, nil)
	if err != nil {
		t.Fatal(err)
	}
	step(second, 10*time.Minute+5*time.Second)
	requireEndedBy(t, ns, second, v1alpha1.EndIdle)
	select {
	case err := <-watcher.closed:
		if !websocket.IsCloseError(err, terminal.CloseEnded) {
			t.Fatalf("the watcher's terminal closed with %v, want the session's end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher's terminal stayed open after the idle end")
	}
	if s := phase(second); s.Status.Heartbeat == nil || !s.Status.Heartbeat.After(s.Status.StartedAt.Time) {
		t.Fatalf("no heartbeat was kept: %+v", s.Status)
	}
	assertNothingLeft(t, ns, second, "web-2", false)
}

// requireEndedBy waits until session name has ended, for want.
func requireEndedBy(t testing.TB, ns, name string, want v1alpha1.EndReason) {
	t.Helper()
	s := cl.WaitSession(t, ns, name, 20*time.Second, "not ended by "+string(want), cluster.Ended, nil)
	if s.Status.End.Reason != want {
		t.Fatalf("ended by %s, want %s", s.Status.End.Reason, want)
	}
}

// TestCopies: a copy and a held copy of a crash-looping pod. The original
// is never touched; the copy takes no traffic, holds no token, runs the
// debug container beside the app (held: sleeping instead of its
// entrypoint), and is deleted at the end.
func TestCopies(t *testing.T) {
	ns := cl.Namespace(t, "relay-copies")
	tr := startRelay(t, config(), clock.RealClock{})
	ctx := context.Background()
	crashing := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: cluster.NodeName, Containers: []corev1.Container{{
			Name: "web", Image: "registry.example/shop/web:1.2", Command: []string{"sh", "-c", "echo boom; sleep 3600"},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
		}}},
	}
	if err := cl.Client.Create(ctx, crashing); err != nil {
		t.Fatal(err)
	}
	// A copy pins the images the node ran: wait until it says which, as
	// it has long said for a pod someone is called about.
	cluster.Eventually(t, 30*time.Second, "the node reports the app's image digest", func() (bool, error) {
		p := &corev1.Pod{}
		err := cl.Client.Get(ctx, client.ObjectKeyFromObject(crashing), p)
		return err == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ImageID != "", err
	})
	for _, mode := range []v1alpha1.SessionMode{v1alpha1.ModeCopy, v1alpha1.ModeHeldCopy} {
		t.Run(string(mode), func(t *testing.T) {
			started := tr.started(t, ns, "web-1", `,"mode":"`+string(mode)+`"`)
			path := sessionPath(ns, started.Name)
			copyName := started.Status.DebugContainer.Pod
			if copyName == "web-1" {
				t.Fatal("a copy session debugs the original pod")
			}
			cp := &corev1.Pod{}
			if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: copyName}, cp); err != nil {
				t.Fatal(err)
			}
			if len(cp.Labels) != 1 || cp.Labels[v1alpha1.SessionLabel] != started.Name {
				t.Fatalf("the copy's labels %v: only the session's, so no Service routes to it", cp.Labels)
			}
			app := cp.Spec.Containers[0]
			held := strings.Join(app.Command, " ")
			if (mode == v1alpha1.ModeHeldCopy) != strings.HasPrefix(held, v1alpha1.HoldCommand+" ") || app.LivenessProbe != nil {
				t.Fatalf("the copy's app container: command %q, probe %v", held, app.LivenessProbe)
			}
			// Held by the debug image's sleep, mounted as an image volume:
			// nothing in the app's image runs, so distroless apps are held too.
			if mode == v1alpha1.ModeHeldCopy {
				var hold *corev1.Volume
				for i, v := range cp.Spec.Volumes {
					if v.Name == v1alpha1.HoldVolume {
						hold = &cp.Spec.Volumes[i]
					}
				}
				if hold == nil || hold.Image == nil || hold.Image.Reference != cluster.DebugImage {
					t.Fatalf("the held copy's hold volume: %+v", hold)
				}
			}
			if cp.Spec.AutomountServiceAccountToken == nil || *cp.Spec.AutomountServiceAccountToken {
				t.Fatal("the copy mounts the app's API token")
			}
			if !strings.HasPrefix(app.Image, "registry.example/shop/web@sha256:") {
				t.Fatalf("the copy runs %s, not the app's image pinned to the digest its node ran", app.Image)
			}
			if sc := app.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
				(mode == v1alpha1.ModeHeldCopy) != (sc.RunAsUser != nil && *sc.RunAsUser == v1alpha1.DebugUserID) {
				t.Fatalf("the copy's app container runs with %+v: non-root, and a held copy's as the debug user", sc)
			}
			// The node ends the copy when its grant does, sweeper or not;
			// so no extension can outlast it.
			ttl := started.Status.Grant.ExpiresAt.Sub(started.Status.StartedAt.Time)
			if d := cp.Spec.ActiveDeadlineSeconds; d == nil || time.Duration(*d)*time.Second != ttl.Round(time.Second) ||
				cp.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Fatalf("the copy's deadline %v and restart policy %s: want its grant's TTL %s, and Never", d, cp.Spec.RestartPolicy, ttl)
			}
			if a := tr.must(t, http.StatusConflict, token(t, alice), "POST", path+"/extensions", `{"duration":"20m","reason":"more"}`); !strings.Contains(string(a.body), "request a new session") {
				t.Fatalf("an extension of a %s: %s", mode, a.body)
			}
			tm, _, err := tr.dial(t, alice, ns, started.Name, nil)
			if err != nil {
				t.Fatal(err)
			}
			tm.send(t, "echo in-the-copy-$((3*3))\n")
			tm.waitFor(t, "in-the-copy-9")
			tr.must(t, http.StatusOK, token(t, alice), "POST", path+"/end", "")
			assertNothingLeft(t, ns, started.Name, copyName, false)
			orig := &corev1.Pod{}
			if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-1"}, orig); err != nil || orig.DeletionTimestamp != nil || len(orig.Spec.EphemeralContainers) != 0 {
				t.Fatalf("the original pod was touched: %v", err)
			}
		})
	}
}
