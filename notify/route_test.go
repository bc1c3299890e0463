package notify

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRouteTo(t *testing.T) {
	shop := &destination{key: "shop"}
	sec := &destination{key: "security"}
	all := &destination{key: "all"}
	routes := []compiledRoute{
		{Route: Route{Clusters: []string{"flight-*"}, Namespaces: []string{"shop", "shop-*"}, Approvers: "shop-oncall"}, dests: []*destination{shop}},
		{Route: Route{Kinds: []string{"glass.broken", "review.*"}, Approvers: "security"}, dests: []*destination{sec, shop}},
		{Route: Route{Kinds: []string{"request.new"}}, dests: []*destination{all}},
	}
	type got struct{ Dest, Approvers string }
	for name, tc := range map[string]struct {
		kind, cluster, namespace string
		want                     []got
	}{
		"a request in shop on flight": {"request.new", "flight-1", "shop", []got{{"shop", "shop-oncall"}, {"all", ""}}},
		"glob namespace":              {"session.started", "flight-2", "shop-eu", []got{{"shop", "shop-oncall"}}},
		"another cluster":             {"session.started", "ground-1", "shop", nil},
		"glass broken: every route, one message per destination": {"glass.broken", "flight-1", "shop",
			[]got{{"shop", "shop-oncall, security"}, {"security", "security"}}},
		"kind pattern":            {"review.overdue", "ground-1", "web", []got{{"security", "security"}, {"shop", "security"}}},
		"a request elsewhere too": {"request.new", "ground-1", "web", []got{{"all", ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			var out []got
			for _, tg := range routeTo(routes, tc.kind, tc.cluster, tc.namespace) {
				out = append(out, got{tg.dest.key, tg.approvers})
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSameDestinationSameKey(t *testing.T) {
	a := Destination{Sink: "email", Addresses: []string{"B@example.com", "a@example.com"}}
	b := Destination{Sink: "email", Addresses: []string{"a@example.com", "b@example.com"}}
	c := Destination{Sink: "email", Addresses: []string{"a@example.com"}}
	if a.key() != b.key() || a.key() == c.key() {
		t.Fatal("destinations are keyed by where they go, in any order and case of addresses")
	}
}

// TestEveryKindHasATitle: a notification of any kind is headed by words, not
// by its kind's spelling.
func TestEveryKindHasATitle(t *testing.T) {
	for _, k := range Kinds {
		if Titles[k] == "" {
			t.Errorf("kind %q has no title", k)
		}
	}
	if len(Titles) != len(Kinds) {
		t.Errorf("%d Titles for %d kinds: a title for a kind nobody sends", len(Titles), len(Kinds))
	}
}
