package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAnchoredSaysWhy: a recording's Anchored condition says whether it is
// in the log, waits for it, or never will be because no log is configured;
// never a Pending that nothing will end, with an empty entry named.
func TestAnchoredSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ev     Evidence
		status metav1.ConditionStatus
		reason string
	}{
		{"in the log", Evidence{ManifestSHA256: "ab", EntryID: "e1"}, metav1.ConditionTrue, "InLog"},
		{"waiting for the log", Evidence{ManifestSHA256: "ab", AnchorPending: true}, metav1.ConditionFalse, "Pending"},
		{"no log", Evidence{ManifestSHA256: "ab"}, metav1.ConditionFalse, "NoLog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &SessionStatus{Phase: PhaseEnded, Evidence: &tc.ev}
			SetConditions(st, metav1.Now())
			c := meta.FindStatusCondition(st.Conditions, ConditionAnchored)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || c.Message == "transparency-log entry " {
				t.Fatalf("Anchored: %+v, want %s %s", c, tc.status, tc.reason)
			}
		})
	}
}
