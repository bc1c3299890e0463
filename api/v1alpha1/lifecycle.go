package v1alpha1

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
// phase never moves back; Denied, Ended and Expired are final.
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
