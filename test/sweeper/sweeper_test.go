package sweeper_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/notify"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// TestGrantDeletedOnTime: the sweeper requeues a grant for exactly its TTL
// and deletes it then, not before.
func TestGrantDeletedOnTime(t *testing.T) {
	ns := namespace(t, "ttl")
	rb := grant(t, ns, "s-ttl", "30m")
	fake := clockAt(rb.CreationTimestamp.Time)
	startSweeper(t, sweeper.Options{Clock: fake})
	waitForWaiter(t, fake)

	fake.Step(30*time.Minute - time.Second)
	time.Sleep(300 * time.Millisecond)
	if !exists(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: rb.Name, Namespace: ns}}) {
		t.Fatal("the grant was deleted a second before its TTL ran out")
	}
	waitForWaiter(t, fake)
	fake.Step(time.Second)
	cluster.Eventually(t, 20*time.Second, "the grant deleted at its TTL", gone(rb))
}

// TestFaultRelayGoneSweeperEnds: an Active session whose relay stopped
// heartbeating is ended by the sweeper: grant gone, session Ended (swept),
// pod recycled; with "keep the pod" approved, the pod stays.
func TestFaultRelayGoneSweeperEnds(t *testing.T) {
	for _, keep := range []bool{false, true} {
		name := "recycle"
		if keep {
			name = "keep"
		}
		t.Run(name, func(t *testing.T) {
			ns := namespace(t, "killed-"+name)
			pod := appPod(t, ns, "web-1")
			rb := grant(t, ns, "s1", "45m")
			addDebugContainer(t, ns, pod.Name, "breakglass-s1")
			started := rb.CreationTimestamp.Time
			s := activeSession(t, ns, "s1", v1alpha1.ModeLive, pod.Name, started, keep)

			// The relay recorded and streamed a segment, then died.
			store := &recording.Dir{Root: t.TempDir()}
			rec, err := recording.New(context.Background(), store, recording.RefOf("test", s), recording.Options{RetainUntil: started.Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			if err := rec.Output(context.Background(), []byte("$ ps aux\r\n")); err != nil {
				t.Fatal(err)
			}
			if err := rec.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}

			fake := clockAt(started.Add(10 * time.Second))
			startSweeper(t, sweeper.Options{Clock: fake, HeartbeatTimeout: time.Minute,
				Evidence: &recording.SessionFinalizer{Store: store, Cluster: "test", Retention: time.Hour, URI: "file://"}})
			waitForWaiter(t, fake)
			fake.Step(time.Minute) // the heartbeat is now 70s old

			cluster.Eventually(t, 20*time.Second, "the session ended by the sweeper", func() (bool, error) {
				got := &v1alpha1.Session{}
				err := cl.Client.Get(context.Background(), clientKey(s), got)
				return err == nil && got.Status.Phase == v1alpha1.PhaseEnded && got.Status.End != nil &&
					got.Status.End.Reason == v1alpha1.EndSwept && got.Status.End.Abnormal &&
					got.Status.End.By == v1alpha1.SweeperUsername && got.Status.End.Detail == "the relay's heartbeat is stale", err
			})
			cluster.Eventually(t, 20*time.Second, "the grant deleted", gone(rb))
			cluster.Eventually(t, 20*time.Second, "the evidence finalized and recorded", func() (bool, error) {
				got := &v1alpha1.Session{}
				if err := cl.Client.Get(context.Background(), clientKey(s), got); err != nil || got.Status.Evidence == nil {
					return false, err
				}
				manifest, err := store.Get(context.Background(), recording.RefOf("test", got).Prefix()+recording.ManifestFile, "")
				if err != nil {
					return false, err
				}
				sum := sha256.Sum256(manifest)
				return got.Status.Evidence.ManifestSHA256 == hex.EncodeToString(sum[:]) &&
					strings.Contains(string(manifest), `"endedAbnormally": true`), nil
			})
			if keep {
				time.Sleep(300 * time.Millisecond)
				if !exists(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}}) {
					t.Fatal("the pod was recycled although the approver chose to keep it")
				}
				return
			}
			cluster.Eventually(t, 20*time.Second, "the pod recycled", gone(pod))
		})
	}
}

// TestCopyDeletedWhenSwept: a copy session's copy pod goes with the session.
func TestCopyDeletedWhenSwept(t *testing.T) {
	ns := namespace(t, "copy")
	rb := grant(t, ns, "s2", "45m")
	copyPod := portalCopy(t, ns, "s2")
	started := rb.CreationTimestamp.Time
	activeSession(t, ns, "s2", v1alpha1.ModeCopy, copyPod.Name, started, false)
	fake := clockAt(started.Add(31 * time.Minute)) // past the hard stop and its grace
	startSweeper(t, sweeper.Options{Clock: fake})
	cluster.Eventually(t, 20*time.Second, "the copy deleted", gone(copyPod))
	cluster.Eventually(t, 20*time.Second, "the grant deleted", gone(rb))
}

// TestFaultSweeperRestartMidWay: a sweeper that was down while a session went
// stale ends it when it comes back; all it needs is in the cluster.
func TestFaultSweeperRestartMidWay(t *testing.T) {
	ns := namespace(t, "restart")
	pod := appPod(t, ns, "web-1")
	rb := grant(t, ns, "s3", "45m")
	started := rb.CreationTimestamp.Time
	s := activeSession(t, ns, "s3", v1alpha1.ModeLive, pod.Name, started, false)

	fake := clockAt(started.Add(10 * time.Second))
	first := startSweeper(t, sweeper.Options{Clock: fake})
	waitForWaiter(t, fake)
	first.stop()

	later := clockAt(started.Add(5 * time.Minute))
	startSweeper(t, sweeper.Options{Clock: later})
	cluster.Eventually(t, 20*time.Second, "the session ended after the restart", func() (bool, error) {
		got := &v1alpha1.Session{}
		err := cl.Client.Get(context.Background(), clientKey(s), got)
		return err == nil && got.Status.Phase == v1alpha1.PhaseEnded, err
	})
	cluster.Eventually(t, 20*time.Second, "the grant deleted", gone(rb))
}

// TestFaultSweeperLeaderStops: of two sweepers, one leads; when it stops, the other takes
// over and sweeps. The election runs on real time; the grants on each
// sweeper's own fake clock.
func TestFaultSweeperLeaderStops(t *testing.T) {
	now := time.Now()
	clocks := map[*running]interface{ Step(time.Duration) }{}
	start := func() *running {
		c := clockAt(now)
		r := startSweeper(t, sweeper.Options{Clock: c, LeaderElection: true,
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond})
		clocks[r] = c
		return r
	}
	a, b := start(), start()
	elected := func(r *running) bool {
		select {
		case <-r.mgr.Elected():
			return true
		default:
			return false
		}
	}
	cluster.Eventually(t, 20*time.Second, "a leader elected", func() (bool, error) { return elected(a) || elected(b), nil })
	time.Sleep(3 * time.Second) // more than a lease: the other must still be waiting
	if elected(a) == elected(b) {
		t.Fatalf("leaders: a %v, b %v; want exactly one", elected(a), elected(b))
	}
	leader, follower := a, b
	if elected(b) {
		leader, follower = b, a
	}
	leader.stop()
	cluster.Eventually(t, 20*time.Second, "the follower takes over", func() (bool, error) { return elected(follower), nil })

	ns := namespace(t, "leader")
	rb := grant(t, ns, "s4", "15m")
	time.Sleep(500 * time.Millisecond) // let the new leader see the grant and wait on its clock
	clocks[follower].Step(16 * time.Minute)
	cluster.Eventually(t, 20*time.Second, "the new leader deletes the expired grant", gone(rb))
}

// TestReviewOverdue: a glass-broken session not reviewed by its due time
// makes the sweeper tell the fallback reviewer, once.
func TestReviewOverdue(t *testing.T) {
	got := make(chan notify.Event, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e notify.Event
		if err := json.NewDecoder(r.Body).Decode(&e); err == nil {
			got <- e
		}
	}))
	defer srv.Close()

	ns := namespace(t, "review")
	portal, err := cl.Portal()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := sessiontest.Make(ns, "s5").Duration(15 * time.Minute).Reason("outage").GlassBroken().Obj()
	if err := portal.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	// As the relay writes a glass-broken session that ends before it starts:
	// approved by nobody, then ended.
	s.Status = v1alpha1.SessionStatus{Phase: v1alpha1.PhaseApproved,
		Approval: &v1alpha1.Approval{By: "glass broken by alice", At: s.CreationTimestamp, Mode: v1alpha1.ModeLive}}
	if err := portal.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.Status.Phase = v1alpha1.PhaseEnded
	s.Status.End = &v1alpha1.End{By: "alice", Reason: v1alpha1.EndUser, At: metav1.NewTime(s.CreationTimestamp.Add(10 * time.Minute))}
	if err := portal.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	fake := clockAt(s.CreationTimestamp.Add(time.Hour))
	startSweeper(t, sweeper.Options{Clock: fake, ReviewWithin: 24 * time.Hour,
		Notifier: &notify.Webhook{URL: srv.URL, PortalURL: "https://tower.example", Cluster: "flight-1", FallbackReviewer: "security-oncall"}})

	cluster.Eventually(t, 20*time.Second, "the review due date set", func() (bool, error) {
		cur := &v1alpha1.Session{}
		err := cl.Client.Get(ctx, clientKey(s), cur)
		return err == nil && cur.Status.Review != nil && cur.Status.Review.DueAt != nil &&
			cur.Status.Review.DueAt.Time.Equal(s.CreationTimestamp.Add(24*time.Hour)), err
	})
	// kubectl users see the sweeper's step on the Session, as the relay's.
	cluster.Eventually(t, 20*time.Second, "the sweeper's Event on the Session", func() (bool, error) {
		list, err := cl.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=s5"})
		for _, e := range list.Items {
			if e.Reason == "ReviewDue" && e.InvolvedObject.Kind == "Session" && strings.HasSuffix(e.Source.Component, "breakglass-sweeper") {
				return true, nil
			}
		}
		return false, err
	})
	select {
	case e := <-got:
		t.Fatalf("told the fallback reviewer before the review was due: %+v", e)
	case <-time.After(200 * time.Millisecond):
	}
	waitForWaiter(t, fake)
	fake.Step(23 * time.Hour)
	select {
	case e := <-got:
		if e.Kind != "review.overdue" || e.Session != "s5" || e.To != "security-oncall" || e.Link != "https://tower.example/sessions/flight-1/review/s5/review" {
			t.Fatalf("unexpected notification %+v", e)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the fallback reviewer was not told")
	}
	cluster.Eventually(t, 20*time.Second, "the notification recorded", func() (bool, error) {
		cur := &v1alpha1.Session{}
		err := cl.Client.Get(ctx, clientKey(s), cur)
		return err == nil && cur.Status.Review != nil && cur.Status.Review.FallbackNotified, err
	})
	select {
	case e := <-got:
		t.Fatalf("told twice: %+v", e)
	case <-time.After(300 * time.Millisecond):
	}
}
