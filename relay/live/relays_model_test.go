package live

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/test/harness/sequential"
)

// Two replicas and one running session, checked exhaustively: second by
// second, every way the replicas can fail (cut off from the API server,
// their Session writes refused, killed), every moment each can claim the
// session and, any time later, have its new debug container running, and
// the property that no two of them ever run it at once. Each replica's decisions are the code's: its presence (lapsed,
// mustFence), its heartbeat (debugsession.TakenUp, MustLetGo), whom it
// takes for gone (holderGone) and its resume (debugsession.Resumable,
// StaleAfter). One clock serves both
// replicas: a skew between theirs is what the margin between letting go
// and counting a heartbeat stale absorbs, and is not modelled. A replica
// sees another's Lease change at once here; a watch that lags is what
// holderGone's look at the Lease after the list guards against, and is not
// modelled either.

// replicaState is one replica as the model holds it. Each time is held as
// its age in seconds, -1 for never, and no older than ageCap: every
// decision compares an age with a bound under a minute, so ages past it
// are one, and the states are finite without a horizon.
type replicaState struct {
	up, reaches, writes bool // running; reaching the API server; its Session writes admitted
	holds               bool // it runs the session
	// starting: it claimed the session and its debug container is not yet
	// running (Resume between its claim and its attach); lost: it let go
	// of its sessions meanwhile, so it lets go of this one as it settles.
	starting, lost bool
	// current: the Session's resumes are still those of this replica's
	// claim (only their equality is read: TakenUp).
	current           bool
	lastBeat          int // its last heartbeat (or claim) written
	lastOK, renewing  int // presence: last renewal that succeeded; since when they succeed unbroken
	fenced, leaseGone bool
	seen              int  // when it last saw the other's Lease change
	otherGone         bool // it counts the other gone
}

type replicasState struct {
	holder           int // the replica the Session names
	heartbeat        int
	released, active bool
	r                [2]replicaState
	faults           int
}

// replicasModel is the two replicas' decisions; a seeded bug replaces one.
type replicasModel struct {
	every     time.Duration
	maxFaults int
	fence     func(lastOK, now time.Time) bool
	letGo     func(lastBeat, now time.Time, every time.Duration) bool
	// absentAdopts: a replica not present takes sessions up; keepsLost: a
	// take-up that settles after its replica let go runs on; keepsLate: a
	// take-up runs however long after its claim (seeded bugs).
	absentAdopts, keepsLost, keepsLate bool
}

func newReplicasModel() *replicasModel {
	return &replicasModel{every: 20 * time.Second, maxFaults: 3, fence: mustFence, letGo: debugsession.MustLetGo}
}

var replicaNames = [2]string{"relay-a", "relay-b"}

// replicasT0 is when the model's session started; replicasNow, the
// model's now, is ten minutes into it: its hard stop and grant are far off.
var (
	replicasT0  = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	replicasNow = replicasT0.Add(10 * time.Minute)
)

// Ages are held up to a second past the longest bound a decision
// compares them with: a heartbeat's with its going stale (three of 20 s
// intervals), presence's with a Lease lapsing (5 s; a seeded bug's 6 s).
const (
	beatAgeCap     = 61
	presenceAgeCap = 7
)

// at is the time of an age.
func at(age int) time.Time {
	if age < 0 {
		return time.Time{}
	}
	return replicasNow.Add(-time.Duration(age) * time.Second)
}

// older is an age a second on, held at most to max.
func older(age, max int) int {
	if age < 0 || age >= max {
		return age
	}
	return age + 1
}

// session is the Session as the API server holds it in s.
func (m *replicasModel) session(s replicasState) *v1alpha1.Session {
	start, deadline, beat := metav1.NewTime(replicasT0), metav1.NewTime(replicasT0.Add(30*time.Minute)), metav1.NewTime(at(s.heartbeat))
	sess := &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Name: "s-1", Namespace: "shop"}, Status: v1alpha1.SessionStatus{
		Phase: v1alpha1.PhaseActive, StartedAt: &start, Deadline: &deadline, Heartbeat: &beat, Relay: replicaNames[s.holder], Resumes: 1,
		Grant:          &v1alpha1.Grant{RoleBinding: "breakglass-s-1", Role: v1alpha1.DebugRole, ExpiresAt: metav1.NewTime(replicasT0.Add(32 * time.Minute))},
		DebugContainer: &v1alpha1.DebugContainer{Pod: "web-1", Name: "debug-s-1"}}}
	if s.released {
		sess.Status.Released = &beat
	}
	if !s.active {
		sess.Status.Phase = v1alpha1.PhaseEnded
	}
	return sess
}

// tick is one second: each running replica renews its presence, judges
// the other's, and keeps its session's heartbeat, as presence.run and
// Session.Enforce do once a second.
func (m *replicasModel) tick(s replicasState) replicasState {
	now := replicasNow
	s.heartbeat = older(s.heartbeat, beatAgeCap)
	for i := range s.r {
		r := &s.r[i]
		r.lastBeat = older(r.lastBeat, beatAgeCap)
		r.lastOK, r.renewing, r.seen = older(r.lastOK, presenceAgeCap), older(r.renewing, presenceAgeCap), older(r.seen, presenceAgeCap)
	}
	for i := range s.r {
		me, other := &s.r[i], &s.r[1-i]
		if !me.up {
			continue
		}
		if me.reaches {
			if me.leaseGone {
				// Its renewal finds its Lease deleted: it lets go, then
				// writes it anew.
				me.holds, me.renewing = false, -1
				me.lost = me.lost || me.starting
			}
			me.leaseGone, me.fenced, me.lastOK = false, false, 0
			if me.renewing < 0 {
				me.renewing = 0
			}
			if other.up && other.reaches {
				other.seen, other.otherGone = 0, false
			}
		} else {
			if m.fence(at(me.lastOK), now) && !me.fenced {
				me.fenced, me.holds = true, false
				me.lost = me.lost || me.starting
			}
			me.renewing = -1
		}
		if me.reaches && !me.otherGone && lapsed(at(me.seen), at(me.renewing), now) {
			other.leaseGone, me.otherGone = true, true
		}
		if me.holds && now.Sub(at(me.lastBeat)) >= m.every {
			switch held := m.session(s); {
			case !me.reaches || !me.writes:
				if m.letGo(at(me.lastBeat), now, m.every) {
					me.holds = false
				}
			case !me.current || !s.active:
				held.Status.Resumes = 0
				if debugsession.TakenUp(held, m.session(s)) {
					me.holds = false
				}
			default:
				s.heartbeat, me.lastBeat = 0, 0
			}
		}
	}
	return s.normal()
}

// normal forgets what no decision reads: a replica's heartbeat and claim
// while it runs nothing.
func (s replicasState) normal() replicasState {
	for i := range s.r {
		if !s.r[i].holds && !s.r[i].starting {
			s.r[i].lastBeat, s.r[i].current = -1, false
		}
	}
	return s
}

type replicasMove struct {
	what string
	to   replicasState
}

// next is every move from s: a second passing, a replica taking the
// session up or handing it over, and a fault.
func (m *replicasModel) next(s replicasState) []replicasMove {
	var out []replicasMove
	out = append(out, replicasMove{"a second passes", m.tick(s)})
	for i := range s.r {
		me := s.r[i]
		if !me.up {
			continue
		}
		name := replicaNames[i]
		present := me.renewing >= 0 && !me.leaseGone
		if me.starting {
			// Its debug container runs and its Watch begins, counting
			// from the claim's heartbeat (settle: let go of if lost).
			t := s
			// Resume refuses to run a take-up whose claim is past the
			// let-go mark; settle lets go of one its replica let go of.
			late := m.letGo(at(me.lastBeat), replicasNow, m.every) && !m.keepsLate
			t.r[i].starting, t.r[i].holds, t.r[i].lost = false, (!me.lost || m.keepsLost) && !late, false
			out = append(out, replicasMove{name + "'s take-up settles", t.normal()})
		}
		if !me.holds && !me.starting && me.reaches && me.writes && (present || m.absentAdopts) {
			// adoptOnce: its replica gone (the other, counted gone; or
			// this one's name, which this process does not run).
			other := s.r[1-i]
			gone := holderGone(replicaNames[s.holder], name, present,
				func(string) bool { return me.otherGone }, func(string) bool { return !other.leaseGone })
			if debugsession.Resumable(m.session(s), replicasNow, debugsession.StaleAfter(m.every), gone) == nil {
				t := s
				t.holder, t.heartbeat, t.released = i, 0, false
				t.r[i].starting, t.r[i].current, t.r[i].lastBeat = true, true, 0
				t.r[1-i].current = false
				out = append(out, replicasMove{name + " claims the session", t})
			}
		}
		if me.holds && me.reaches && me.writes && me.current {
			t := s
			t.released, t.r[i].holds, t.r[i].up = true, false, false
			out = append(out, replicasMove{name + " hands the session over and stops", t.normal()})
		}
		if s.faults >= m.maxFaults {
			continue
		}
		fault := func(what string, change func(r *replicaState)) {
			t := s
			t.faults++
			change(&t.r[i])
			out = append(out, replicasMove{name + " " + what, t.normal()})
		}
		if me.reaches {
			fault("is cut off from the API server", func(r *replicaState) { r.reaches = false })
		} else {
			fault("reaches the API server again", func(r *replicaState) { r.reaches = true })
		}
		if me.writes {
			fault("has its Session writes refused", func(r *replicaState) { r.writes = false })
		} else {
			fault("has its Session writes admitted again", func(r *replicaState) { r.writes = true })
		}
		fault("is killed", func(r *replicaState) { r.up, r.holds, r.starting, r.lost = false, false, false, false })
	}
	return out
}

// explore walks every state from relay-a running the session, and gives
// the first path to one where both replicas run it, if any.
func (m *replicasModel) explore() (states int, twoHolders []string) {
	replica := replicaState{up: true, reaches: true, writes: true}
	start := replicasState{active: true, r: [2]replicaState{replica, replica}}
	start.r[0].holds, start.r[0].current = true, true
	type parent struct {
		what string
		prev replicasState
	}
	from := map[replicasState]parent{start: {}}
	queue := []replicasState{start}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s.r[0].holds && s.r[1].holds {
			var path []string
			for at := s; at != start; at = from[at].prev {
				path = append([]string{from[at].what}, path...)
			}
			var said []string
			second := 0
			for _, what := range path {
				if what == "a second passes" {
					second++
					continue
				}
				said = append(said, fmt.Sprintf("+%ds %s", second, what))
			}
			return len(from), said
		}
		for _, mv := range m.next(s) {
			if _, seen := from[mv.to]; !seen {
				from[mv.to] = parent{mv.what, s}
				queue = append(queue, mv.to)
			}
		}
	}
	return len(from), nil
}

// TestNoTwoReplicasRunOneSession holds the replicas to the property.
func TestNoTwoReplicasRunOneSession(t *testing.T) {
	sequential.Only(t)
	states, path := newReplicasModel().explore()
	t.Logf("%d states explored", states)
	if path != nil {
		t.Fatalf("two replicas run one session after:\n%s", strings.Join(path, "\n"))
	}
	if states < 5000 {
		t.Errorf("only %d states explored: the model stopped early", states)
	}
}

// TestNoTwoReplicasCatchesSeededBugs seeds a bug into one decision at a
// time and wants the property broken.
func TestNoTwoReplicasCatchesSeededBugs(t *testing.T) {
	sequential.Only(t)
	for name, seed := range map[string]func(m *replicasModel){
		"a replica cut off lets go only once others count it gone": func(m *replicasModel) {
			m.fence = func(lastOK, now time.Time) bool { return now.Sub(lastOK) >= PresenceLapse+time.Second }
		},
		"a replica whose heartbeats are refused holds on": func(m *replicasModel) {
			m.letGo = func(time.Time, time.Time, time.Duration) bool { return false }
		},
		"a replica not present takes sessions up":                 func(m *replicasModel) { m.absentAdopts = true },
		"a take-up that settles after its replica let go runs on": func(m *replicasModel) { m.keepsLost = true },
		"a take-up runs however long after its claim":             func(m *replicasModel) { m.keepsLate = true },
	} {
		t.Run(name, func(t *testing.T) {
			m := newReplicasModel()
			seed(m)
			if _, path := m.explore(); path == nil {
				t.Error("the seeded bug went unseen: no state has two replicas running the session")
			} else {
				t.Logf("two replicas run one session after:\n%s", strings.Join(path, "\n"))
			}
		})
	}
}
