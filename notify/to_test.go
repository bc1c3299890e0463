package notify

import (
	"testing"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// TestToEveryKind: each kind is addressed by its audience in the
// vocabulary, the requester by their name (never the word "requester"),
// and no kind is addressed to nobody.
func TestToEveryKind(t *testing.T) {
	s := &v1alpha1.Session{Spec: v1alpha1.SessionSpec{Requester: "alice@example.com"}}
	want := map[string]string{
		v1alpha1.NotifyRequestNew: "approvers", v1alpha1.NotifyGlassBroken: "everyone",
		v1alpha1.NotifySessionResumed: "alice@example.com", v1alpha1.NotifyRequestDenied: "alice@example.com",
		v1alpha1.NotifyReviewOverdue: "security@example.com",
	}
	for _, kind := range Kinds {
		got := To(kind, s, "security@example.com")
		if got == "" {
			t.Errorf("%s is addressed to nobody", kind)
		}
		if w, ok := want[kind]; ok && got != w {
			t.Errorf("%s is addressed to %q, want %q", kind, got, w)
		}
	}
	if got := To("made.up", s, ""); got != "" {
		t.Errorf("a kind outside the vocabulary is addressed to %q", got)
	}
}
