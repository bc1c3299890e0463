// Package lifecycle is a Session's one state machine. The phases and who
// may move a Session between them are api/v1alpha1's PhaseMoves table (the
// cluster's Session policy is generated from it); this package is how the
// relay and the sweeper make every move: checked against that table,
// audited before it takes effect, written to the Session, and audited again
// as undone when the write fails. Nothing else writes a Session's status.
// The relay's heartbeat goes through here too (Beat), the one write that
// is not audited: a liveness stamp every 15 seconds, no decision and no
// phase, whose record would drown the log.
//
// The moves, by step (the audit event's kind):
//
//	request     ""       -> Pending   the portal, for a requester
//	request     ""       -> Approved  the portal, on a cluster needing no approval
//	breakglass  ""       -> Approved  the portal, nobody approving; a review falls due
//	approve     Pending  -> Approved  the portal, for an approver (never the requester)
//	deny        Pending  -> Denied    the portal, for an approver
//	end         Pending, Approved -> Ended  the portal, withdrawn before it started
//	start       Approved -> Active    the portal, grant and debug container in place
//	end         Active   -> Ended     the portal, or the sweeper for an abandoned session
//	expire      Pending, Approved -> Expired  the sweeper (or the portal), too old to act on
//	extend-request, extend, extend-deny  Active -> Active  the portal: more time asked, given or refused
//	evidence, anchor, review, review-due: records that keep the phase
//	(Beat)   Active   -> Active    the portal's heartbeat, not audited
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
)

// Move is one change to a Session's status.
type Move struct {
	// Step is the audit step (v1alpha1.Step...).
	Step string
	// To is the phase the move leads to; "" keeps the phase.
	To v1alpha1.SessionPhase
	// Actor is who asked: a person, or the plane's identity.
	Actor  string
	Reason string
	// Status writes what the move puts in the status besides the phase
	// (the approval, the grant, the end).
	Status func(*v1alpha1.SessionStatus)
	// Merge writes a merge patch instead of an update: for moves that race
	// the relay's own heartbeat, where the resource version moves but no
	// decision is at stake. Decisions use updates, so two people deciding
	// at once cannot both win.
	Merge bool
}

// Machine makes moves as one writer of Sessions.
type Machine struct {
	Client client.Client
	// Kube posts a Kubernetes Event for each step, for kubectl users; the
	// audit log is the record. Optional.
	Kube   kubernetes.Interface
	Writer v1alpha1.Writer
	// Component names the writer in Events.
	Component string
	// Cluster is the cluster's name as the relay knows it, recorded with
	// each step so that events of two clusters' Sessions of the same name
	// stay apart.
	Cluster string
	// Audit is the hash-chained log every move goes to first. Nil only in
	// tests that do not look at the log.
	Audit *audit.Log
	Clock clock.PassiveClock
}

// RelayComponent is the relay's name as a component: the source of its
// Kubernetes Events. Whom it acts as is v1alpha1.PortalUsername.
const RelayComponent = "breakglass-relay"

// AsPortal is the machine as the relay writes on cluster: every decision a
// person makes there and every step of a session it runs.
func AsPortal(cluster string, c client.Client, kube kubernetes.Interface, a *audit.Log, clk clock.PassiveClock) *Machine {
	return &Machine{Client: c, Kube: kube, Writer: v1alpha1.WriterPortal, Component: RelayComponent, Cluster: cluster, Audit: a, Clock: clk}
}

// moveTimeout bounds one move: its audit, its write and the read that
// judges a write whose answer was lost.
const moveTimeout = 30 * time.Second

// ErrCannotMove is a move the lifecycle does not allow this writer.
var ErrCannotMove = errors.New("the lifecycle does not allow this move")

// ErrNotAudited is a move refused because the audit log could not take it:
// nothing was changed.
var ErrNotAudited = errors.New("the audit log could not record it, so nothing was changed")

// Make audits m, then writes it to s. A move the table does not allow is
// refused before anything is written; an audit that fails leaves the
// Session as it was (and, if some sink did take the event, says so in an
// undone event); a write that fails is audited as undone and s is left as
// it was read. The write does not stop with ctx (a caller hanging up must
// not leave the log saying the opposite of what happened), and a write
// whose answer was lost is judged by reading the Session again.
func (m *Machine) Make(ctx context.Context, s *v1alpha1.Session, mv Move) error {
	from := s.Status.Phase
	to := mv.To
	if to == "" {
		to = from
	}
	if !v1alpha1.CanMove(from, to, m.Writer) {
		return fmt.Errorf("session %s/%s is %s: %s may not %s it (to %s): %w", s.Namespace, s.Name, phaseName(from), m.Writer, mv.Step, to, ErrCannotMove)
	}
	// Bounded on its own: an API server that never answers must not hold
	// the caller for ever now that its cancellation no longer reaches here.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), moveTimeout)
	defer cancel()
	if err := m.Note(ctx, mv.Step, mv.Actor, s, mv.Reason); err != nil {
		// A sink that did take the event must not be left saying it happened.
		_ = m.Note(ctx, v1alpha1.StepUndone, mv.Actor, s, fmt.Sprintf("%s did not take effect: not every audit sink took it", mv.Step))
		return fmt.Errorf("%s: %w: %w", mv.Step, ErrNotAudited, err)
	}
	before := s.DeepCopy()
	s.Status.Phase = to
	if mv.Status != nil {
		mv.Status(&s.Status)
	}
	v1alpha1.SetConditions(&s.Status, metav1.NewTime(m.now()))
	var err error
	if mv.Merge {
		err = m.Client.Status().Patch(ctx, s, client.MergeFrom(before))
	} else {
		err = m.Client.Status().Update(ctx, s)
	}
	if err == nil {
		return nil
	}
	// A time of its own to judge and record the failure: the move's may be
	// what ran out.
	after, cancelAfter := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancelAfter()
	if m.tookEffect(after, s) {
		return nil
	}
	s.Status = before.Status
	s.ResourceVersion = before.ResourceVersion
	undone := fmt.Sprintf("%s did not take effect: %v", mv.Step, err)
	if aerr := m.Note(after, v1alpha1.StepUndone, mv.Actor, s, undone); aerr != nil {
		return errors.Join(err, fmt.Errorf("auditing that %s was undone: %w", mv.Step, aerr))
	}
	return err
}

// Beat writes the portal's sign of life on an Active Session it runs, at
// the version last read: a Session someone else wrote since is not
// overwritten (the conflict is returned, s left as it was, for the caller
// to read again and judge). Not audited (see the package comment).
func (m *Machine) Beat(ctx context.Context, s *v1alpha1.Session) error {
	if m.Writer != v1alpha1.WriterPortal || s.Status.Phase != v1alpha1.PhaseActive {
		return fmt.Errorf("session %s/%s is %s: %s may not beat for it: %w", s.Namespace, s.Name, phaseName(s.Status.Phase), m.Writer, ErrCannotMove)
	}
	before := s.DeepCopy()
	beat := metav1.NewTime(m.now())
	s.Status.Heartbeat = &beat
	err := m.Client.Status().Patch(ctx, s, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if err != nil {
		s.Status.Heartbeat = before.Status.Heartbeat
	}
	return err
}

// tookEffect reads the Session again after a write that answered with an
// error (a timeout, a lost connection) and reports whether it holds the
// status the move wrote anyway (the heartbeat aside), updating s.
func (m *Machine) tookEffect(ctx context.Context, s *v1alpha1.Session) bool {
	fresh := &v1alpha1.Session{}
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(s), fresh); err != nil {
		return false
	}
	want, got := s.Status.DeepCopy(), fresh.Status.DeepCopy()
	want.Heartbeat, got.Heartbeat = nil, nil
	if !equality.Semantic.DeepEqual(want, got) {
		return false
	}
	s.ResourceVersion = fresh.ResourceVersion
	return true
}

// NotePlane audits a step of the plane that is no move of a Session's
// lifecycle (a refusal, a search, standing rights found or taken away),
// with what every audited step carries: the cluster, and the actor id the
// caller's context holds. session, when not empty, is the namespace/name a
// refused request was about. No Event: nothing here has a Session to show
// it on.
func (m *Machine) NotePlane(ctx context.Context, kind, actor, session, reason string, details map[string]string) error {
	if m.Audit == nil {
		return nil
	}
	all := maps.Clone(details)
	if all == nil {
		all = map[string]string{}
	}
	for k, v := range map[string]string{"cluster": m.Cluster, "actorID": ActorIDFrom(ctx)} {
		if _, set := all[k]; v != "" && !set {
			all[k] = v
		}
	}
	if len(all) == 0 {
		all = nil
	}
	_, err := m.Audit.Record(ctx, audit.Event{Kind: kind, Actor: actor, Session: session, Reason: reason, Details: all})
	return err
}

// NoteAbout audits, as Note does, a step taken about the Session
// namespace/name that the writer does not hold: a grant or a pod found by
// its session label, whose Session may be gone.
func (m *Machine) NoteAbout(ctx context.Context, kind, actor, namespace, name, reason string) error {
	return m.Note(ctx, kind, actor, &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, reason)
}

// Note audits what actor did about s (a step that writes nothing to the
// Session, or one about to be written) and shows it as an Event on the
// Session. An audit sink that fails is an error: no step goes unaudited.
func (m *Machine) Note(ctx context.Context, kind, actor string, s *v1alpha1.Session, reason string) error {
	var uid map[string]string
	if s.UID != "" {
		uid = map[string]string{"uid": string(s.UID)}
	}
	if err := m.NotePlane(ctx, kind, actor, s.Namespace+"/"+s.Name, reason, uid); err != nil {
		return err
	}
	if m.Kube == nil {
		return nil
	}
	now := metav1.NewTime(m.now())
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", s.Name, now.UnixNano()), Namespace: s.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Session",
			Namespace: s.Namespace, Name: s.Name, UID: s.UID},
		Reason: eventReason(kind), Message: reason, Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: m.Component},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if kind == v1alpha1.StepRefusal || kind == v1alpha1.StepTampered || kind == v1alpha1.StepUndone {
		event.Type = corev1.EventTypeWarning
	}
	// An Event is a courtesy to kubectl users; the audit log is the record.
	// So it is posted beside the step rather than in its way (a person
	// waiting for a shell, or a replica taking up a hundred sessions, waits
	// on no Event), by at most eventPosters at once: one dropped when they
	// are all busy costs nothing but the courtesy, where an unbounded
	// backlog would queue every later request behind it (someone looping
	// on an audited request with a stolen token).
	select {
	case eventSlots <- struct{}{}:
	default:
		return nil
	}
	eventsPosting.Add(1)
	kube := m.Kube
	go func() {
		defer func() { <-eventSlots; eventsPosting.Done() }()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventTimeout)
		defer cancel()
		_, _ = kube.CoreV1().Events(event.Namespace).Create(ctx, event, metav1.CreateOptions{})
	}()
	return nil
}

const (
	// eventTimeout bounds posting one Event.
	eventTimeout = 10 * time.Second
	// eventPosters is how many Events a process posts at once.
	eventPosters = 16
)

var (
	eventSlots    = make(chan struct{}, eventPosters)
	eventsPosting sync.WaitGroup
)

// EventsPosted waits, up to within, for the Events being posted: a
// process about to exit calls it so that its last steps' Events are not
// lost.
func EventsPosted(within time.Duration) {
	done := make(chan struct{})
	go func() { eventsPosting.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
	}
}

func (m *Machine) now() time.Time {
	if m.Clock == nil {
		return time.Now()
	}
	return m.Clock.Now()
}

type actorIDKey struct{}

// WithActorID carries the identity (issuer#subject) of the person a request
// acts for, so every step audited for it names them by identity as well as
// by the name people read.
func WithActorID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, actorIDKey{}, id)
}

// ActorIDFrom is the identity WithActorID put in ctx, or "".
func ActorIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(actorIDKey{}).(string)
	return id
}

func phaseName(p v1alpha1.SessionPhase) string {
	if p == "" {
		return "new"
	}
	return string(p)
}

// eventReason is the audit kind as an Event reason: "review-due" -> "ReviewDue".
func eventReason(kind string) string {
	var b strings.Builder
	for _, part := range strings.Split(kind, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	if b.Len() == 0 {
		return "Step"
	}
	return b.String()
}
