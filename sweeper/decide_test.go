package sweeper

import (
	"context"
	"errors"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(t0.Add(d)); return &t }

func TestGrantExpiry(t *testing.T) {
	for _, tc := range []struct {
		ttl      string
		want     time.Duration
		readable bool
	}{
		{"30m", 30 * time.Minute, true},
		{"1h15m", 75 * time.Minute, true},
		{"", 0, false},
		{"soon", 0, false},
		{"-5m", 0, false},
	} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0), Labels: map[string]string{v1alpha1.TTLLabel: tc.ttl}}}
		got, ok := GrantExpiry(rb)
		if ok != tc.readable || !got.Equal(t0.Add(tc.want)) {
			t.Errorf("ttl %q: expiry %v (%v), want %v (%v)", tc.ttl, got, ok, t0.Add(tc.want), tc.readable)
		}
	}
}

func TestDecide(t *testing.T) {
	s := &SessionSweeper{HeartbeatTimeout: time.Minute, Grace: 30 * time.Second, ReviewWithin: 24 * time.Hour,
		PendingFor: time.Hour, ApprovedFor: 30 * time.Minute}
	active := func(mut func(*v1alpha1.Session)) *v1alpha1.Session {
		return sessiontest.Make("shop", "s1").Created(t0).Started(t0).Heartbeat(t0.Add(10 * time.Minute)).With(mut).Obj()
	}
	for _, tc := range []struct {
		name        string
		sess        *v1alpha1.Session
		now         time.Duration
		wantEnd     bool
		wantExpire  bool
		wantRecycle bool
		wantNotify  bool
		wantDue     bool
		wantRequeue time.Duration
	}{
		{name: "healthy: wait for the heartbeat to go stale", sess: active(nil), now: 10*time.Minute + 10*time.Second, wantRequeue: 50 * time.Second},
		{name: "stale heartbeat", sess: active(nil), now: 11 * time.Minute, wantEnd: true},
		{name: "past the hard stop, heartbeat fresh", sess: active(func(s *v1alpha1.Session) { s.Status.Heartbeat = at(30 * time.Minute) }),
			now: 30*time.Minute + 30*time.Second, wantEnd: true},
		{name: "at the hard stop the relay gets its grace", sess: active(func(s *v1alpha1.Session) { s.Status.Heartbeat = at(30 * time.Minute) }),
			now: 30 * time.Minute, wantRequeue: 30 * time.Second},
		{name: "no deadline recorded: from start and duration", sess: active(func(s *v1alpha1.Session) {
			s.Status.Deadline = nil
			s.Status.Heartbeat = at(31 * time.Minute)
		}), now: 31 * time.Minute, wantEnd: true},
		{name: "never a heartbeat", sess: active(func(s *v1alpha1.Session) { s.Status.Heartbeat = nil }), now: time.Minute, wantEnd: true},
		{name: "ended: make sure the debug container is gone", sess: active(func(s *v1alpha1.Session) { s.Status.Phase = v1alpha1.PhaseEnded }),
			now: time.Hour, wantRecycle: true},
		{name: "a pending request waits for its decision", sess: active(func(s *v1alpha1.Session) { s.Status.Phase = v1alpha1.PhasePending }),
			now: 59 * time.Minute, wantRequeue: time.Minute},
		{name: "a request nobody decided on expires", sess: active(func(s *v1alpha1.Session) { s.Status.Phase = v1alpha1.PhasePending }),
			now: time.Hour, wantExpire: true},
		{name: "an approval waits for its start, from when it was given", sess: active(func(s *v1alpha1.Session) {
			s.Status.Phase = v1alpha1.PhaseApproved
			s.Status.Approval = &v1alpha1.Approval{By: "bob", At: *at(50 * time.Minute)}
		}), now: 70 * time.Minute, wantRequeue: 10 * time.Minute},
		{name: "an approval nobody used expires", sess: active(func(s *v1alpha1.Session) {
			s.Status.Phase = v1alpha1.PhaseApproved
			s.Status.Approval = &v1alpha1.Approval{By: "bob", At: *at(50 * time.Minute)}
		}), now: 80 * time.Minute, wantExpire: true},
		{name: "expired: make sure nothing is left", sess: active(func(s *v1alpha1.Session) { s.Status.Phase = v1alpha1.PhaseExpired }),
			now: 2 * time.Hour, wantRecycle: true},
		{name: "glass broken: the review falls due", sess: active(func(s *v1alpha1.Session) {
			s.Status.Phase = v1alpha1.PhaseEnded
			s.Spec.GlassBroken = true
		}), now: time.Hour, wantRecycle: true, wantDue: true, wantRequeue: 23 * time.Hour},
		{name: "glass broken: just created, the relay writes its status", sess: active(func(s *v1alpha1.Session) {
			s.Status = v1alpha1.SessionStatus{}
			s.Spec.GlassBroken = true
		}), now: time.Minute},
		{name: "glass broken: review overdue", sess: active(func(s *v1alpha1.Session) {
			s.Status.Phase = v1alpha1.PhaseEnded
			s.Spec.GlassBroken = true
			s.Status.Review = &v1alpha1.Review{DueAt: at(24 * time.Hour)}
		}), now: 25 * time.Hour, wantRecycle: true, wantNotify: true},
		{name: "glass broken: fallback already told", sess: active(func(s *v1alpha1.Session) {
			s.Status.Phase = v1alpha1.PhaseEnded
			s.Spec.GlassBroken = true
			s.Status.Review = &v1alpha1.Review{DueAt: at(24 * time.Hour), FallbackNotified: true}
		}), now: 25 * time.Hour, wantRecycle: true},
		{name: "glass broken: reviewed", sess: active(func(s *v1alpha1.Session) {
			s.Status.Phase = v1alpha1.PhaseEnded
			s.Spec.GlassBroken = true
			s.Status.Review = &v1alpha1.Review{DueAt: at(24 * time.Hour), By: "carol"}
		}), now: 25 * time.Hour, wantRecycle: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := s.decide(tc.sess, t0.Add(tc.now))
			if a.end != tc.wantEnd || a.expire != tc.wantExpire || a.recycle != tc.wantRecycle || a.notify != tc.wantNotify || (a.setDueAt != nil) != tc.wantDue || a.requeueIn != tc.wantRequeue {
				t.Errorf("decide = end %v recycle %v notify %v due %v requeue %v; want %v %v %v %v %v",
					a.end, a.recycle, a.notify, a.setDueAt != nil, a.requeueIn, tc.wantEnd, tc.wantRecycle, tc.wantNotify, tc.wantDue, tc.wantRequeue)
			}
		})
	}
}

// unusedFinalizer stands for a configured evidence store; decide never calls it.
type unusedFinalizer struct{}

func (unusedFinalizer) Finalize(context.Context, *v1alpha1.Session) (*v1alpha1.Evidence, error) {
	return nil, errors.New("decide does no I/O")
}

// TestDecideFinalize: a session that ran and ended without evidence (its
// relay's store was away at the end) is finalized from its segments, on
// every pass until it is; one that never ran, or has its evidence, is not.
func TestDecideFinalize(t *testing.T) {
	s := &SessionSweeper{HeartbeatTimeout: time.Minute, Evidence: unusedFinalizer{}}
	ended := func(mut func(*v1alpha1.SessionStatus)) *v1alpha1.Session {
		st := v1alpha1.SessionStatus{Phase: v1alpha1.PhaseEnded, StartedAt: at(0), End: &v1alpha1.End{By: "bob", At: *at(10 * time.Minute)}}
		if mut != nil {
			mut(&st)
		}
		return &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}, Status: st}
	}
	for _, tc := range []struct {
		name string
		sess *v1alpha1.Session
		want bool
	}{
		{"ended without evidence", ended(nil), true},
		{"ended with evidence", ended(func(st *v1alpha1.SessionStatus) { st.Evidence = &v1alpha1.Evidence{ManifestSHA256: "ab"} }), false},
		{"ended before it started", ended(func(st *v1alpha1.SessionStatus) { st.StartedAt = nil }), false},
		{"expired", ended(func(st *v1alpha1.SessionStatus) { st.Phase, st.StartedAt, st.End = v1alpha1.PhaseExpired, nil, nil }), false},
		{"active", ended(func(st *v1alpha1.SessionStatus) {
			st.Phase, st.End, st.Heartbeat = v1alpha1.PhaseActive, nil, at(time.Minute)
		}), false},
	} {
		if got := s.decide(tc.sess, t0.Add(11*time.Minute)).finalize; got != tc.want {
			t.Errorf("%s: finalize %v, want %v", tc.name, got, tc.want)
		}
	}
	if (&SessionSweeper{}).decide(ended(nil), t0.Add(11*time.Minute)).finalize {
		t.Error("finalize without an evidence store configured")
	}
}
