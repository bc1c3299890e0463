package relay

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/test/harness/sequential"
	"github.com/tower-dev/breakglass/vap"
)

// The lifecycle's properties, each checked over every state the model
// reaches (lifecycle_model_test.go), and each shown to fail on a bug
// seeded into one decision of the code.

// Each property's findings, by the name a seeded bug's test looks for.
const (
	propRefused    = "a move the code made was refused by the cluster"
	propDeadEnd    = "a dead end"
	propNoReviewer = "a review nobody but its requester is offered"
	propGrantLives = "a grant outlives its TTL"
	propTrap       = "a person's move only an admin can undo"
)

// check explores the lifecycle from its starts and gives what breaks
// each property.
func (m *modelChecker) check() map[string][]string {
	m.explore(modelStarts())
	found := map[string][]string{}
	note := func(prop, what string) { found[prop] = append(found[prop], what) }
	for _, r := range m.refused {
		note(propRefused, r)
	}
	// Every state can be finished and deleted by the plane, the clock and
	// people other than its requester (who may be gone): a reviewer's
	// review counts, as the plane keeps a glass-broken record for it.
	withoutRequester := m.finishable(func(mv modelMove) bool { return !mv.byRequester })
	// And whatever a person does, the plane, the clock and a review alone
	// finish it: no approver, requester or reviewer leaves a state that
	// waits on a cluster admin.
	byThePlane := m.finishable(func(mv modelMove) bool { return !mv.byPerson || mv.what == "review" })
	for k, s := range m.states {
		if !withoutRequester[k] {
			note(propDeadEnd, "from "+m.describe(s)+" no move of the plane, the clock or anyone but the requester leads to a record that may be deleted")
		}
		for _, mv := range m.moves[k] {
			if mv.byPerson && !byThePlane[mv.to.key()] {
				note(propTrap, fmt.Sprintf("%s's %s from %s leaves %s, which only a cluster admin can clear", mv.actor, mv.what, m.describe(s), m.describe(mv.to)))
			}
		}
		for _, g := range s.grants {
			if expiry, _ := sweeper.GrantExpiry(g); s.now.After(expiry) {
				note(propGrantLives, fmt.Sprintf("grant %s (ttl %s) still stands at +%s, past its expiry at +%s, in %s",
					g.Name, g.Labels[v1alpha1.TTLLabel], s.now.Sub(modelT0), expiry.Sub(modelT0), m.describe(s)))
			}
		}
		if s.sess.ReviewOpen() && s.sess.Status.Phase.Final() && !m.offeredToOthers(s, wire.OfferReview) {
			note(propNoReviewer, m.describe(s)+" waits for a review nobody but its requester is offered")
		}
	}
	for _, f := range found {
		sort.Strings(f)
	}
	return found
}

// offeredToOthers: someone other than the requester is offered o.
func (m *modelChecker) offeredToOthers(s modelState, o wire.Offer) bool {
	for _, p := range modelOthers {
		for _, got := range m.offers(p.standing(), s.sess) {
			if got == o {
				return true
			}
		}
	}
	return false
}

// finishable are the states from which a deletable one is reached by the
// moves counted alone.
func (m *modelChecker) finishable(counted func(modelMove) bool) map[string]bool {
	ok := map[string]bool{}
	for k, s := range m.states {
		if m.deletable(s) {
			ok[k] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for k, moves := range m.moves {
			if ok[k] {
				continue
			}
			for _, mv := range moves {
				if counted(mv) && ok[mv.to.key()] {
					ok[k], changed = true, true
					break
				}
			}
		}
	}
	return ok
}

// TestLifecycleProperties explores the lifecycle, with a transparency log
// and without, and holds it to its properties: every move the code makes
// is admitted by the cluster; every state can be finished and deleted
// without its requester; nothing a person does waits on a cluster admin;
// no grant stands past its TTL; a review that is open, once the session
// will not run again, is offered to someone other than the requester.
func TestLifecycleProperties(t *testing.T) {
	sequential.Only(t)
	for name, withLog := range map[string]bool{"with a transparency log": true, "without one": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := newModelChecker(t, modelSweeper(withLog))
			start := time.Now()
			found := m.check()
			moves := 0
			for _, ms := range m.moves {
				moves += len(ms)
			}
			t.Logf("%d states, %d moves explored in %s", len(m.states), moves, time.Since(start).Round(time.Millisecond))
			if len(m.states) < 1000 {
				t.Fatalf("only %d states explored: the model stopped early", len(m.states))
			}
			for _, prop := range []string{propRefused, propDeadEnd, propNoReviewer, propGrantLives, propTrap} {
				for _, f := range found[prop] {
					t.Errorf("%s: %s", prop, f)
				}
			}
			m.mustReach(t, "an extension approved whose old grant stays to its TTL", func(s modelState) bool {
				return len(s.grants) == 2 && len(s.sess.Status.Extensions) == 1
			})
			m.mustReach(t, "a glass-broken session expired, reviewed and deletable", func(s modelState) bool {
				return s.sess.Spec.GlassBroken && s.sess.Status.Phase == v1alpha1.PhaseExpired && m.deletable(s)
			})
		})
	}
}

// mustReach fails unless the model reaches a state like this: the bounds
// keep what the properties are about in reach.
func (m *modelChecker) mustReach(t *testing.T, what string, like func(modelState) bool) {
	t.Helper()
	for _, s := range m.states {
		if like(s) {
			return
		}
	}
	t.Errorf("the model never reaches %s", what)
}

// TestLifecyclePropertiesCatchSeededBugs seeds one bug at a time into a
// decision the model takes from the code, and wants the property it
// breaks to say so, naming a state.
func TestLifecyclePropertiesCatchSeededBugs(t *testing.T) {
	sequential.Only(t)
	seeds := []struct {
		name, prop, naming string
		seed               func(t *testing.T, m *modelChecker)
	}{{
		// The bug issue 50 found: an expired glass-broken session could be
		// neither reviewed nor deleted.
		name: "the relay reviews only Ended and Denied sessions", prop: propDeadEnd, naming: "Expired glass=true",
		seed: func(t *testing.T, m *modelChecker) {
			m.offers = func(p api.Standing, s *v1alpha1.Session) []wire.Offer {
				out := p.Offers(s)
				if s.Status.Phase != v1alpha1.PhaseEnded && s.Status.Phase != v1alpha1.PhaseDenied {
					out = without(out, wire.OfferReview)
				}
				return out
			}
		},
	}, {
		name: "review is offered only to those who approve", prop: propNoReviewer, naming: "approval=GlassBroken",
		seed: func(t *testing.T, m *modelChecker) {
			m.offers = func(p api.Standing, s *v1alpha1.Session) []wire.Offer {
				out := p.Offers(s)
				if !p.Can(api.ActionApprove) || s.Status.Approval == nil || s.Status.Approval.Kind != v1alpha1.ApprovalPerson {
					out = without(out, wire.OfferReview)
				}
				return out
			}
		},
	}, {
		name: "the grant sweeper is not told to look again at a grant's TTL", prop: propGrantLives, naming: "breakglass-s-1",
		seed: func(t *testing.T, m *modelChecker) {
			m.grantDue = func(rb *rbacv1.RoleBinding, now time.Time) (bool, time.Duration) {
				expired, _ := sweeper.GrantDue(rb, now)
				return expired, 0
			}
		},
	}, {
		name: "the delete policy leaves Denied out of the final phases", prop: propTrap, naming: "bob's deny from Pending",
		seed: func(t *testing.T, m *modelChecker) {
			pairs, err := vap.BuildAll(policies.Flight, policies.DefaultParams())
			if err != nil {
				t.Fatal(err)
			}
			seeded := false
			for _, p := range pairs {
				for i, v := range p.Policy.Spec.Validations {
					if p.Policy.Name == "breakglass-session-delete" && strings.Contains(v.Expression, "'Denied', ") {
						p.Policy.Spec.Validations[i].Expression, seeded = strings.Replace(v.Expression, "'Denied', ", "", 1), true
					}
				}
			}
			if !seeded {
				t.Fatal("the delete policy no longer lists the final phases as the seed expects")
			}
			m.policy = vap.NewEvaluator(pairs)
		},
	}}
	for _, sd := range seeds {
		t.Run(sd.name, func(t *testing.T) {
			t.Parallel()
			m := newModelChecker(t, modelSweeper(false))
			sd.seed(t, m)
			found := m.check()[sd.prop]
			if len(found) == 0 {
				t.Fatalf("the seeded bug went unseen: no finding of %q", sd.prop)
			}
			if !strings.Contains(strings.Join(found, "\n"), sd.naming) {
				t.Errorf("%q found %d times, none naming %q; the first: %s", sd.prop, len(found), sd.naming, found[0])
			}
			t.Logf("%s (%d): %s", sd.prop, len(found), found[0])
		})
	}
}

func without(offers []wire.Offer, o wire.Offer) []wire.Offer {
	return slices.DeleteFunc(slices.Clone(offers), func(x wire.Offer) bool { return x == o })
}
