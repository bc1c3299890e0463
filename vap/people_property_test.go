package vap_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// A person as the identity provider knows them: one subject, and the names
// a token may show for them (a changed e-mail, another spelling). Two of
// them share a display name.
type person struct {
	id    string
	names []string
}

var people = []person{
	{"https://idp.example#u-alice", []string{"alice@example.com", "Alice@example.com", "alice"}},
	{"https://idp.example#u-bob", []string{"bob@example.com", "alice"}},
	{"https://other.example#u-alice", []string{"alice@example.com"}},
}

// checkDecisions: the portal writes an approval or a review of a random
// requester's session by a random person, each under a random name, each
// identity recorded or not. Whenever both identities are recorded, the
// cluster admits it exactly when the decider is another person, whatever
// the names; when either is not, it refuses the requester's own name. And
// the relay's own check (Session.IsRequester) agrees with the cluster on
// every one, so neither side lets through what the other refuses.
func checkDecisions(t testing.TB, plane *propertyPlane, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 7))
	spelling := func() (int, string, string) {
		i := r.IntN(len(people))
		p := people[i]
		id := p.id
		if r.IntN(4) == 0 {
			id = ""
		}
		return i, p.names[r.IntN(len(p.names))], id
	}
	who, name, id := spelling()
	by, byName, byID := spelling()
	s := sessiontest.Make("shop", "s1").Reason("x").Requester(name, id).Obj()
	old := s.DeepCopy()
	what := "approval"
	if r.IntN(2) == 0 {
		old.Status.Phase = v1alpha1.PhasePending
		s.Status.Phase = v1alpha1.PhaseApproved
		s.Status.Approval = &v1alpha1.Approval{By: byName, ByID: byID, At: metav1.NewTime(time.Unix(10, 0)), Mode: v1alpha1.ModeLive}
	} else {
		what = "review"
		old.Spec.GlassBroken, s.Spec.GlassBroken = true, true
		old.Status = v1alpha1.SessionStatus{Phase: v1alpha1.PhaseExpired, Review: &v1alpha1.Review{DueAt: &metav1.Time{Time: time.Unix(20, 0)}}}
		s.Status = *old.Status.DeepCopy()
		s.Status.Review.By, s.Status.Review.ByID, s.Status.Review.At = byName, byID, &metav1.Time{Time: time.Unix(30, 0)}
	}
	res := plane.eval(t, "UPDATE", v1alpha1.GroupVersion.Group, "sessions", "status", "shop", s.Name, s, old, plane.portal)
	relaySays := !s.IsRequester(byName, byID)
	var want bool
	switch {
	case id != "" && byID != "":
		want = who != by
	default:
		want = name != byName
	}
	if res.Allowed() != want || relaySays != res.Allowed() {
		return fmt.Errorf("seed %d: %s by %q (%q) of %q (%q)'s session: the cluster admits %t (%v), the relay %t, want %t",
			seed, what, byName, byID, name, id, res.Allowed(), res.Denials, relaySays, want)
	}
	return nil
}
