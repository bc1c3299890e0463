package v1alpha1

import "slices"

// Writer is who may write a Session's status: the portal (the relay) or the
// sweeper. Nobody else writes it; the admission policy on Sessions holds
// every writer to this file's table.
type Writer string

// The writers of a Session's status.
const (
	WriterPortal  Writer = "portal"
	WriterSweeper Writer = "sweeper"
)

// PhaseMoves is a Session's lifecycle: from each phase, the phases it may
// move to and who may move it there. A new Session has no phase (""). A
// phase never moves back; one with no move out is final (Final).
var PhaseMoves = map[SessionPhase]map[SessionPhase][]Writer{
	"": {
		PhasePending:  {WriterPortal},
		PhaseApproved: {WriterPortal}, // glass broken, or no approval needed on this cluster
	},
	PhasePending: {
		PhaseApproved: {WriterPortal},
		PhaseDenied:   {WriterPortal},
		PhaseEnded:    {WriterPortal}, // withdrawn before it started
		PhaseExpired:  {WriterPortal, WriterSweeper},
	},
	PhaseApproved: {
		PhaseActive:  {WriterPortal},
		PhaseEnded:   {WriterPortal},
		PhaseExpired: {WriterPortal, WriterSweeper},
	},
	PhaseActive: {
		PhaseEnded: {WriterPortal, WriterSweeper},
	},
}

// CanMove reports whether w may move a Session from phase from to phase to.
// Staying in a phase is always allowed.
func CanMove(from, to SessionPhase, w Writer) bool {
	if from == to {
		return true
	}
	for _, allowed := range PhaseMoves[from][to] {
		if allowed == w {
			return true
		}
	}
	return false
}

// KeepsPod reports whether the approver chose to keep the target pod, with
// its debug container, after a live session: the one case in which a
// debugged pod is not recycled at the end (a copy is always deleted).
func (s *Session) KeepsPod() bool {
	return s.Spec.Mode == ModeLive && s.Status.Approval != nil && s.Status.Approval.KeepPod
}

// SamePerson is the rule that keeps the requester from approving, reviewing
// or deciding an extension of their own session, and says whether an
// extension is asked for by the requester: two people are the same when
// both their identities ("issuer#subject") are recorded and equal, or, when
// either is not, when their names are. Where both identities are recorded
// (the relay records them with every request and decision), two people of
// one display name are told apart and one person under two names (a
// changed e-mail, a second spelling) is still one; where one is missing,
// only the names are compared, and a second spelling passes for another
// person. The Session policy's rules are built from
// policies.SamePersonExpr, which says the same in CEL.
func SamePerson(name, id, otherName, otherID string) bool {
	if id != "" && otherID != "" {
		return id == otherID
	}
	return name == otherName
}

// IsRequester reports whether the person of this name and identity asked
// for s, by SamePerson.
func (s *Session) IsRequester(name, id string) bool {
	return SamePerson(s.Spec.Requester, s.Spec.RequesterID, name, id)
}

// Final reports whether a Session in phase p never moves again: a phase of
// PhaseTerms that PhaseMoves gives no way out of. A phase this build does
// not know (a newer plane's) is not final to it. Every reader of "is it over" asks this, so that
// a new phase is final or not in one place.
func (p SessionPhase) Final() bool {
	known := slices.ContainsFunc(PhaseTerms, func(t Term) bool { return t.Name == string(p) })
	return known && len(PhaseMoves[p]) == 0
}

// FinalPhases are the names of the phases a Session never leaves, in
// PhaseTerms' order: for the Session policies' CEL and words, and the web
// front ends' vocabulary.
func FinalPhases() []string {
	var out []string
	for _, t := range PhaseTerms {
		if SessionPhase(t.Name).Final() {
			out = append(out, t.Name)
		}
	}
	return out
}

// ReviewOpen reports whether s waits for a review: one falls due (a
// glass-broken session's) and nobody has made it. The record is kept until
// it is made.
func (s *Session) ReviewOpen() bool {
	r := s.Status.Review
	return (s.Spec.GlassBroken || (r != nil && r.DueAt != nil)) && !s.Reviewed()
}

// Reviewed reports whether a person has reviewed s.
func (s *Session) Reviewed() bool {
	return s.Status.Review != nil && s.Status.Review.By != ""
}

// Reviewable reports whether s may be reviewed now: once, when it will not
// run again, whichever way it came to a final phase. A glass broken and
// never used is reviewed too (it expired): the review is of the decision
// to break it, and the record may go only after it. Who reviews is
// another person than the requester (IsRequester), with the review
// permission.
func (s *Session) Reviewable() bool {
	return s.Status.Phase.Final() && !s.Reviewed()
}
