package api

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// A session in each state its page shows, and who looks at it.
func mayCase(phase v1alpha1.SessionPhase, edit ...func(*v1alpha1.Session)) *v1alpha1.Session {
	return sessiontest.Make("shop", "s-1").Requester("alice@example.com", "iss#alice").Phase(phase).With(edit...).Obj()
}

func approvedBy(id string) func(*v1alpha1.Session) {
	return func(s *v1alpha1.Session) { s.Status.Approval = &v1alpha1.Approval{By: "bob@example.com", ByID: id} }
}

func person(name, id string, actions ...Action) Standing {
	return Standing{Caller: Caller{Name: name, ID: id}, Cluster: "flight", Can: func(a Action) bool { return slices.Contains(actions, a) }, Watching: true}
}

var (
	alice = person("alice@example.com", "iss#alice", ActionRequest, ActionBreakGlass)
	// alice under another address is still alice: her identity decides.
	aliceRenamed = person("alice@corp.example.com", "iss#alice", ActionRequest, ActionApprove, ActionReview)
	bob          = person("bob@example.com", "iss#bob", ActionApprove, ActionEnd, ActionReview, ActionViewSensitive)
	carol        = person("carol@example.com", "iss#carol", ActionReview, ActionViewSensitive)
	// dave approves in shop but holds no end permission.
	dave = person("dave@example.com", "iss#dave", ActionRequest, ActionApprove, ActionReview)
)

func TestOffers(t *testing.T) {
	ended := func(s *v1alpha1.Session) { s.Status.Evidence = &v1alpha1.Evidence{ManifestSHA256: "ab"} }
	due := func(s *v1alpha1.Session) { s.Status.Review = &v1alpha1.Review{DueAt: &metav1.Time{}} }
	glass := func(s *v1alpha1.Session) {
		s.Spec.GlassBroken = true
		s.Status.Approval = &v1alpha1.Approval{By: "glass broken by alice"}
	}
	sensitive := func(s *v1alpha1.Session) {
		s.Status.Approval = &v1alpha1.Approval{By: "bob", ByID: "iss#bob", ProcessAccess: true}
	}
	asked := func(s *v1alpha1.Session) {
		s.Status.ExtensionRequest = &v1alpha1.ExtensionRequest{By: "alice@example.com"}
	}
	moderated := func(p Standing) Standing { p.Moderated = true; return p }
	notWatching := func(p Standing) Standing { p.Watching = false; return p }
	cases := map[string]struct {
		who  Standing
		sess *v1alpha1.Session
		want []wire.Offer
	}{
		"the requester waits":                          {alice, mayCase(v1alpha1.PhasePending), []wire.Offer{wire.OfferWithdraw}},
		"an approver decides or cancels":               {bob, mayCase(v1alpha1.PhasePending), []wire.Offer{wire.OfferApprove, wire.OfferDeny, wire.OfferCancel}},
		"never one's own, under another name":          {aliceRenamed, mayCase(v1alpha1.PhasePending), []wire.Offer{wire.OfferWithdraw}},
		"a reviewer has nothing to do yet":             {carol, mayCase(v1alpha1.PhasePending), []wire.Offer{}},
		"the requester starts an approved one":         {alice, mayCase(v1alpha1.PhaseApproved, approvedBy("iss#bob")), []wire.Offer{wire.OfferStart, wire.OfferWithdraw}},
		"an approver cancels what a person approved":   {dave, mayCase(v1alpha1.PhaseApproved, approvedBy("iss#bob")), []wire.Offer{wire.OfferCancel}},
		"no veto on a broken glass without end":        {dave, mayCase(v1alpha1.PhaseApproved, glass), []wire.Offer{}},
		"the end permission ends a broken glass":       {bob, mayCase(v1alpha1.PhaseApproved, glass), []wire.Offer{wire.OfferCancel}},
		"no veto where approval is not needed":         {dave, mayCase(v1alpha1.PhaseApproved, approvedBy("")), []wire.Offer{}},
		"the requester types, ends, asks for more":     {alice, mayCase(v1alpha1.PhaseActive), []wire.Offer{wire.OfferEnd, wire.OfferType, wire.OfferExtend}},
		"an ender watches and ends":                    {bob, mayCase(v1alpha1.PhaseActive), []wire.Offer{wire.OfferEnd, wire.OfferWatch}},
		"an approver without end only watches":         {dave, mayCase(v1alpha1.PhaseActive), []wire.Offer{wire.OfferWatch}},
		"a watching moderator ends":                    {moderated(dave), mayCase(v1alpha1.PhaseActive), []wire.Offer{wire.OfferEnd, wire.OfferWatch}},
		"a moderator not watching does not":            {notWatching(moderated(dave)), mayCase(v1alpha1.PhaseActive), []wire.Offer{wire.OfferWatch}},
		"more time asked: another person decides":      {dave, mayCase(v1alpha1.PhaseActive, asked), []wire.Offer{wire.OfferWatch, wire.OfferDecideExtension}},
		"more time asked: the requester waits":         {alice, mayCase(v1alpha1.PhaseActive, asked), []wire.Offer{wire.OfferEnd, wire.OfferType}},
		"a reviewer does not watch":                    {carol, mayCase(v1alpha1.PhaseActive), []wire.Offer{}},
		"a requester plays her recording":              {alice, mayCase(v1alpha1.PhaseEnded, ended), []wire.Offer{wire.OfferPlay}},
		"not yet finalized: nothing to play":           {bob, mayCase(v1alpha1.PhaseEnded), []wire.Offer{}},
		"a review due is offered to others":            {carol, mayCase(v1alpha1.PhaseEnded, ended, due), []wire.Offer{wire.OfferReview, wire.OfferPlay}},
		"never to the requester":                       {aliceRenamed, mayCase(v1alpha1.PhaseEnded, ended, due), []wire.Offer{wire.OfferPlay}},
		"a sensitive recording needs viewSensitive":    {alice, mayCase(v1alpha1.PhaseEnded, ended, sensitive), []wire.Offer{}},
		"played with viewSensitive":                    {carol, mayCase(v1alpha1.PhaseEnded, ended, sensitive), []wire.Offer{wire.OfferPlay}},
		"a denied request with a review due":           {bob, mayCase(v1alpha1.PhaseDenied, due), []wire.Offer{wire.OfferReview}},
		"an expired session offers nothing to do here": {bob, mayCase(v1alpha1.PhaseExpired), []wire.Offer{}},
		"a glass broken and never used is reviewed":    {carol, mayCase(v1alpha1.PhaseExpired, glass, due), []wire.Offer{wire.OfferReview}},
		"but not by the one who broke it":              {aliceRenamed, mayCase(v1alpha1.PhaseExpired, glass, due), []wire.Offer{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.who.Offers(tc.sess)); diff != "" {
				t.Errorf("Offers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOffersAreTheRules: an offer is made exactly when the rule the
// handler asks allows it, so a page never offers what the relay refuses.
func TestOffersAreTheRules(t *testing.T) {
	rules := map[wire.Offer]func(Standing, *v1alpha1.Session) error{
		wire.OfferApprove: Standing.MayDecide,
		wire.OfferStart:   Standing.MayStart,
		wire.OfferReview:  Standing.MayReview,
		wire.OfferPlay:    Standing.MayPlay,
	}
	due := func(s *v1alpha1.Session) { s.Status.Review = &v1alpha1.Review{DueAt: &metav1.Time{}} }
	done := func(s *v1alpha1.Session) { s.Status.Evidence = &v1alpha1.Evidence{} }
	for _, phase := range []v1alpha1.SessionPhase{"", v1alpha1.PhasePending, v1alpha1.PhaseApproved, v1alpha1.PhaseDenied,
		v1alpha1.PhaseActive, v1alpha1.PhaseEnded, v1alpha1.PhaseExpired} {
		for _, who := range []Standing{alice, aliceRenamed, bob, carol, dave} {
			sess := mayCase(phase, due, done)
			got := who.Offers(sess)
			for o, rule := range rules {
				if allowed := rule(who, sess) == nil; allowed != slices.Contains(got, o) {
					t.Errorf("%s, %s: offered %s %v, the rule allows it %v", phase, who.Caller.Name, o, !allowed, allowed)
				}
			}
			_, endErr := who.MayEnd(sess)
			ends := slices.ContainsFunc(got, func(o wire.Offer) bool {
				return o == wire.OfferEnd || o == wire.OfferWithdraw || o == wire.OfferCancel
			})
			if ends != (endErr == nil) {
				t.Errorf("%s, %s: offered an end %v, the rule: %v", phase, who.Caller.Name, ends, endErr)
			}
		}
	}
}

// TestChoicesAreAccepted: every duration a portal offers is one the relay
// takes, and the form starts at one of them.
func TestChoicesAreAccepted(t *testing.T) {
	for _, d := range wire.DurationChoices {
		if _, err := CheckRequest(&wire.Request{Pod: "web-1", Mode: v1alpha1.ModeLive, Duration: d, Reason: "r"}); err != nil {
			t.Errorf("the request form offers %s: %v", d, err)
		}
	}
	if !slices.Contains(wire.DurationChoices, wire.DefaultDuration) {
		t.Errorf("the form starts at %s, not one of %q", wire.DefaultDuration, wire.DurationChoices)
	}
	for _, d := range wire.ExtensionChoices {
		if _, err := CheckExtension(&wire.ExtensionAsk{Duration: d, Reason: "r"}); err != nil {
			t.Errorf("an ask for more time offers %s: %v", d, err)
		}
	}
}
