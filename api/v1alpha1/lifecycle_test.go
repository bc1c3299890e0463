package v1alpha1

import (
	"slices"
	"testing"
)

// order ranks the phases along the lifecycle; a move never goes back.
var order = map[SessionPhase]int{"": 0, PhasePending: 1, PhaseApproved: 2, PhaseDenied: 3, PhaseActive: 3, PhaseEnded: 4, PhaseExpired: 4}

// TestPhaseMoves holds the lifecycle table to what the Session policy and
// its readers rely on: every move goes forward, the final phases have none,
// only the portal records a decision or a start, and the sweeper ends only
// what runs or lapsed.
func TestPhaseMoves(t *testing.T) {
	for from, tos := range PhaseMoves {
		for to, writers := range tos {
			if order[to] <= order[from] {
				t.Errorf("%q -> %s goes back", from, to)
			}
			if len(writers) == 0 {
				t.Errorf("%q -> %s has no writer", from, to)
			}
		}
	}
	for _, final := range []SessionPhase{PhaseDenied, PhaseEnded, PhaseExpired} {
		if len(PhaseMoves[final]) != 0 {
			t.Errorf("%s is final but has moves %v", final, PhaseMoves[final])
		}
	}
	for _, c := range []struct {
		from, to SessionPhase
		w        Writer
		want     bool
	}{
		{PhasePending, PhaseApproved, WriterPortal, true},
		{PhasePending, PhaseApproved, WriterSweeper, false},
		{PhasePending, PhaseDenied, WriterSweeper, false},
		{PhaseApproved, PhaseActive, WriterSweeper, false},
		{PhaseActive, PhaseEnded, WriterSweeper, true},
		{PhaseEnded, PhaseActive, WriterPortal, false},
		{PhaseDenied, PhaseApproved, WriterPortal, false},
		{PhaseActive, PhaseActive, WriterSweeper, true},
		{"", PhaseActive, WriterPortal, false},
	} {
		if got := CanMove(c.from, c.to, c.w); got != c.want {
			t.Errorf("CanMove(%q, %s, %s) = %t, want %t", c.from, c.to, c.w, got, c.want)
		}
	}
}

// TestFinalPhases: the phases with no move out are final, in PhaseTerms'
// order; no phase yet, or one this build does not know, is not.
func TestFinalPhases(t *testing.T) {
	got := FinalPhases()
	if want := []string{string(PhaseDenied), string(PhaseEnded), string(PhaseExpired)}; !slices.Equal(got, want) {
		t.Fatalf("FinalPhases() = %v, want %v", got, want)
	}
	for _, p := range []SessionPhase{"", PhasePending, PhaseApproved, PhaseActive, "Archived"} {
		if p.Final() {
			t.Errorf("%q is final", p)
		}
	}
}
