// Package debugsession_test runs whole debug sessions on a real API server with
// the Flight policies and a virtual node: grant, debug container, attach,
// recording, end.
package debugsession_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/live"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

var (
	// brokenImage is allowed by the policies but cannot be pulled by the node.
	brokenImage = "registry.example/breakglass/debug@sha256:" + strings.Repeat("b", 64)
	cl          *cluster.Cluster
)

func TestMain(m *testing.M) {
	if os.Getenv(attachChildEnv) != "" {
		os.Exit(attachChild())
	}
	os.Exit(prereq.Run(m, run, prereq.ControlPlane...))
}

func run(m *testing.M) int {
	return cluster.RunSuite(m, cluster.Options{Profile: policies.Flight, DebugImages: []string{cluster.DebugImage, brokenImage},
		VirtualNode: true, UnpullableImages: []string{brokenImage}}, &cl)
}

func runner(t testing.TB, store recording.Store, log *audit.Log) *debugsession.Runner {
	t.Helper()
	return runnerOn(t, cl, cluster.DebugImage, store, log)
}

// runnerOn is runner on cluster c, with debugImage.
func runnerOn(t testing.TB, c *cluster.Cluster, debugImage string, store recording.Store, log *audit.Log) *debugsession.Runner {
	t.Helper()
	portal, err := c.Portal()
	if err != nil {
		t.Fatal(err)
	}
	return &debugsession.Runner{Cluster: "test", Client: portal.Client, Kube: portal.Kube, Config: portal.Config, Store: store, Audit: log,
		Clock: clock.RealClock{}, DebugImage: debugImage, Grace: 2 * time.Minute, MaxTTL: 75 * time.Minute, Retention: time.Hour}
}

// approvedSession is alice's request, approved by bob, on a running pod.
func approvedSession(t testing.TB, ns string, keepPod bool) *v1alpha1.Session {
	t.Helper()
	cl.RunningPod(t, ns, "web-1")
	return approvedOn(t, cl, ns, keepPod)
}

// approvedOn is alice's request, approved by bob, on cluster c's pod web-1.
func approvedOn(t testing.TB, c *cluster.Cluster, ns string, keepPod bool) *v1alpha1.Session {
	t.Helper()
	ctx := context.Background()
	portal, err := c.Portal()
	if err != nil {
		t.Fatal(err)
	}
	s := sessiontest.Make(ns, "s1").KeepPod(keepPod).Obj()
	if err := portal.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.Status = v1alpha1.SessionStatus{Phase: v1alpha1.PhaseApproved,
		Approval: &v1alpha1.Approval{By: "bob", At: metav1.Now(), Mode: v1alpha1.ModeLive, KeepPod: keepPod}}
	if err := portal.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWholeSession: start, type a command and see its output, end by the
// user; afterwards no grant, the pod recycled, the Session ended with its
// evidence, the recording's hash matching, every step audited.
func TestWholeSession(t *testing.T) {
	ns := cl.Namespace(t, "whole")
	s := approvedSession(t, ns, false)
	store := &recording.Dir{Root: t.TempDir()}
	var auditLog strings.Builder
	r := runner(t, store, audit.NewLog(audit.Event{}, nil, &audit.Writer{W: &auditLog}))
	ctx := context.Background()

	run, err := live.Start(ctx, r, s)
	if err != nil {
		t.Fatal(err)
	}
	wantConditions(t, s, map[string]metav1.ConditionStatus{v1alpha1.ConditionGranted: metav1.ConditionTrue, v1alpha1.ConditionAttached: metav1.ConditionTrue})
	lines := bufio.NewScanner(run.Output(requester))
	if _, err := run.Write([]byte("echo session-$((6*7)) as $(id -u)\n")); err != nil {
		t.Fatal(err)
	}
	uid := v1alpha1.DebugUserID
	if os.Geteuid() != 0 {
		uid = int64(os.Geteuid())
	}
	want := fmt.Sprintf("session-42 as %d", uid)
	found := make(chan bool, 1)
	go func() {
		for lines.Scan() {
			if cluster.IsLine(lines.Text(), want) {
				found <- true
				return
			}
		}
		found <- false
	}()
	select {
	case ok := <-found:
		if !ok {
			t.Fatalf("the terminal ended before %q", want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no %q within 20s", want)
	}
	if err := run.End(ctx, "alice", v1alpha1.EndUser, ""); err != nil {
		t.Fatal(err)
	}

	grant := &rbacv1.RoleBinding{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "breakglass-s1"}, grant); !apierrors.IsNotFound(err) {
		t.Fatalf("the grant is still there: %v", err)
	}
	cluster.Eventually(t, 20*time.Second, "the pod recycled", func() (bool, error) {
		err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-1"}, &corev1.Pod{})
		return apierrors.IsNotFound(err), err
	})
	got := &v1alpha1.Session{}
	if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.PhaseEnded || got.Status.End == nil || got.Status.End.Reason != v1alpha1.EndUser || got.Status.End.By != "alice" {
		t.Fatalf("the Session's end: %+v", got.Status)
	}
	manifest, err := store.Get(ctx, recording.RefOf("test", got).Prefix()+recording.ManifestFile, "")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(manifest)
	if got.Status.Evidence == nil || got.Status.Evidence.ManifestSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("the evidence in the Session does not match the manifest")
	}
	wantConditions(t, got, map[string]metav1.ConditionStatus{v1alpha1.ConditionGranted: metav1.ConditionFalse,
		v1alpha1.ConditionAttached: metav1.ConditionFalse, v1alpha1.ConditionRecorded: metav1.ConditionTrue, v1alpha1.ConditionAnchored: metav1.ConditionFalse})
	in, out, _ := cluster.Transcript(t, store, recording.RefOf("test", got).Prefix())
	if in != "echo session-$((6*7)) as $(id -u)\n" || !strings.Contains(out, want) {
		t.Fatalf("the transcript: input %q, output %q", in, out)
	}
	if n, err := audit.Verify(strings.NewReader(auditLog.String())); err != nil || n != 4 || !strings.Contains(auditLog.String(), `"kind":"start"`) {
		t.Fatalf("audit: %d events, %v\n%s", n, err, auditLog.String())
	}
	lifecycle.EventsPosted(10 * time.Second) // posted beside each step
	events := &corev1.EventList{}
	if err := cl.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Session" && e.InvolvedObject.Name == "s1" {
			reasons = append(reasons, e.Reason)
		}
	}
	sort.Strings(reasons)
	if strings.Join(reasons, ",") != "Attach,End,Grant,Start" {
		t.Fatalf("Events on the Session: %v, want Grant, Start, Attach and End", reasons)
	}
}

// TestFaultNoStoreNoStart: a session that cannot be recorded is refused before
// any grant exists.
func TestFaultNoStoreNoStart(t *testing.T) {
	ns := cl.Namespace(t, "nostore")
	s := approvedSession(t, ns, false)
	r := runner(t, &recording.Dir{Root: "/proc/breakglass-no-store"}, nil)
	if _, err := live.Start(context.Background(), r, s); err == nil || !strings.Contains(err.Error(), "cannot be recorded") {
		t.Fatalf("Start = %v", err)
	}
	list := &rbacv1.RoleBindingList{}
	if err := cl.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil || len(list.Items) != 0 {
		t.Fatalf("grants left behind: %d, %v", len(list.Items), err)
	}
}

// TestKeepPodAndNothingLeftOnFailure: "keep the pod" is honoured at the end;
// a start that fails after the grant takes the grant back.
func TestKeepPodAndNothingLeftOnFailure(t *testing.T) {
	ctx := context.Background()
	t.Run("keep the pod", func(t *testing.T) {
		ns := cl.Namespace(t, "keep")
		s := approvedSession(t, ns, true)
		run, err := live.Start(ctx, runner(t, &recording.Dir{Root: t.TempDir()}, nil), s)
		if err != nil {
			t.Fatal(err)
		}
		if err := run.End(ctx, "bob", v1alpha1.EndApprover, ""); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{}
		if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-1"}, pod); err != nil || pod.DeletionTimestamp != nil {
			t.Fatalf("the pod was recycled although the approver kept it: %v", err)
		}
	})
	t.Run("the target pod is gone", func(t *testing.T) {
		ns := cl.Namespace(t, "gone")
		s := approvedSession(t, ns, false)
		if err := cl.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := live.Start(ctx, runner(t, &recording.Dir{Root: t.TempDir()}, nil), s); err == nil || !strings.Contains(err.Error(), "target pod") {
			t.Fatalf("Start = %v", err)
		}
		list := &rbacv1.RoleBindingList{}
		if err := cl.Client.List(ctx, list, client.InNamespace(ns)); err != nil || len(list.Items) != 0 {
			t.Fatalf("a grant was left behind: %d, %v", len(list.Items), err)
		}
	})
}

// TestLimits ends sessions by the idle limit, the disconnect limit and the
// hard stop, on the runner's injected clock.
func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits debugsession.Limits
		viewer bool
		step   time.Duration
		want   v1alpha1.EndReason
	}{
		{"idle", debugsession.Limits{Idle: 10 * time.Minute, Disconnect: time.Hour, Heartbeat: 15 * time.Second}, true, 10 * time.Minute, v1alpha1.EndIdle},
		{"disconnect", debugsession.Limits{Idle: time.Hour, Disconnect: 2 * time.Minute, Heartbeat: 15 * time.Second}, false, 2 * time.Minute, v1alpha1.EndDisconnect},
		{"hard stop", debugsession.Limits{Idle: 2 * time.Hour, Disconnect: 2 * time.Hour, Heartbeat: 15 * time.Second}, true, 30 * time.Minute, v1alpha1.EndHardStop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startOnFakeClock(t, cl.Namespace(t, "limit-"+strings.ReplaceAll(tc.name, " ", "-")), false)
			s, ns, ctx := f.s, f.s.Namespace, context.Background()
			if tc.viewer {
				f.watchOutput()
			}
			ended := f.watch(t, tc.limits)
			f.step(tc.step - time.Second)
			f.waitLooking()
			select {
			case r := <-ended:
				t.Fatalf("ended by %s a second early", r)
			default:
			}
			f.clock.Step(time.Second)
			select {
			case got := <-ended:
				if got != tc.want {
					t.Fatalf("ended by %s, want %s", got, tc.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the limit did not end the session")
			}
			cur := &v1alpha1.Session{}
			if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(s), cur); err != nil {
				t.Fatal(err)
			}
			if cur.Status.End == nil || cur.Status.End.Reason != tc.want || cur.Status.End.By != v1alpha1.PortalUsername || cur.Status.End.Detail != "" || cur.Status.Heartbeat == nil {
				t.Fatalf("the Session: %+v", cur.Status)
			}
			list := &rbacv1.RoleBindingList{}
			if err := cl.Client.List(ctx, list, client.InNamespace(ns)); err != nil || len(list.Items) != 0 {
				t.Fatalf("the grant was left: %d, %v", len(list.Items), err)
			}
		})
	}
}

// TestShellExitEndsSession: the requester's shell exiting ends the session
// at once, as ended by the requester: no waiting for the idle limit, the
// pod recycled and the grant revoked.
func TestShellExitEndsSession(t *testing.T) {
	ns := cl.Namespace(t, "shell-exit")
	s := approvedSession(t, ns, false)
	r := runner(t, &recording.Dir{Root: t.TempDir()}, nil)
	ctx := context.Background()
	run, err := live.Start(ctx, r, s)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan v1alpha1.EndReason, 1)
	go func() {
		// Limits far away: only the stream's end can end it in time.
		reason, err := run.Enforce(ctx, debugsession.Limits{Idle: time.Hour, Disconnect: time.Hour, Heartbeat: 15 * time.Second})
		if err != nil {
			t.Errorf("Enforce: %v", err)
		}
		ended <- reason
	}()
	if _, err := run.Write([]byte("exit\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ended:
		if got != v1alpha1.EndUser {
			t.Fatalf("ended by %s, want %s", got, v1alpha1.EndUser)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the shell exited and the session went on")
	}
	cur := &v1alpha1.Session{}
	if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(s), cur); err != nil {
		t.Fatal(err)
	}
	if cur.Status.Phase != v1alpha1.PhaseEnded || cur.Status.End == nil || cur.Status.End.By != "alice" ||
		cur.Status.End.Reason != v1alpha1.EndUser || cur.Status.End.Abnormal {
		t.Fatalf("the Session: %+v", cur.Status)
	}
	list := &rbacv1.RoleBindingList{}
	if err := cl.Client.List(ctx, list, client.InNamespace(ns)); err != nil || len(list.Items) != 0 {
		t.Fatalf("the grant was left: %d, %v", len(list.Items), err)
	}
	pod := &corev1.Pod{}
	err = cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-1"}, pod)
	if err == nil && pod.DeletionTimestamp == nil {
		t.Fatal("the debugged pod was not recycled")
	}
}

// wantConditions checks the Session's conditions as the API server stored
// them (the Session policy admitted them), and as kubectl get sessions -o
// wide shows them: the CRD's printer columns, in the API server's Table.
func wantConditions(t *testing.T, s *v1alpha1.Session, want map[string]metav1.ConditionStatus) {
	t.Helper()
	got := &v1alpha1.Session{}
	if err := cl.Client.Get(context.Background(), client.ObjectKeyFromObject(s), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != len(want) {
		t.Errorf("conditions %+v, want %v", got.Status.Conditions, want)
	}
	for typ, status := range want {
		if c := meta.FindStatusCondition(got.Status.Conditions, typ); c == nil || c.Status != status {
			t.Errorf("condition %s: %+v, want %s", typ, c, status)
		}
	}
	var table metav1.Table
	err := cl.Kube.CoreV1().RESTClient().Get().AbsPath("/apis/breakglass.tower.dev/v1alpha1/namespaces", s.Namespace, "sessions", s.Name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(context.Background()).Into(&table)
	if err != nil {
		t.Fatal(err)
	}
	columns := map[string]int{}
	for i, c := range table.ColumnDefinitions {
		columns[c.Name] = i
	}
	for typ, status := range want {
		i, ok := columns[typ]
		if !ok || len(table.Rows) != 1 || table.Rows[0].Cells[i] != string(status) {
			t.Errorf("kubectl get sessions -o wide, column %s: %v", typ, table.Rows)
		}
	}
}
