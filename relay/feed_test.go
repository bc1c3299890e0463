package relay

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// TestShownStateIgnoresTheHeartbeat: a running session's heartbeat, written
// every 15 s, is no change a page shows; a phase or an end is.
func TestShownStateIgnoresTheHeartbeat(t *testing.T) {
	s := &v1alpha1.Session{Spec: v1alpha1.SessionSpec{TargetPod: "web-1"}, Status: v1alpha1.SessionStatus{Phase: v1alpha1.PhaseActive}}
	beat := s.DeepCopy()
	at := metav1.NewTime(time.Now())
	beat.Status.Heartbeat = &at
	if shownState(s) != shownState(beat) {
		t.Error("a heartbeat counts as a change to show")
	}
	ended := beat.DeepCopy()
	ended.Status.Phase = v1alpha1.PhaseEnded
	ended.Status.End = &v1alpha1.End{By: "alice", Reason: v1alpha1.EndUser, At: at}
	if shownState(beat) == shownState(ended) {
		t.Error("an end does not count as a change to show")
	}
}
