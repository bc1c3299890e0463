package notify

import (
	"path"
	"slices"
	"strings"
)

// Route sends the events it matches to its destinations. Every route that
// matches an event gets it (not only the first): a team's channel and the
// security mailbox can both hear of a glass broken in the team's
// namespace. A destination named by several matching routes gets the
// event once, showing each route's approvers.
type Route struct {
	// Clusters and Namespaces are path.Match patterns ("*", "shop-*");
	// empty matches all.
	Clusters   []string `json:"clusters,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"`
	// Kinds are the events this route takes (patterns too: "request.*");
	// empty takes all.
	Kinds []string `json:"kinds,omitempty"`
	// Approvers names the group that decides here, shown in the message
	// (who may approve is the relay's permissions, not this).
	Approvers string        `json:"approvers,omitempty"`
	To        []Destination `json:"to"`
}

// Destination is one place a route's events go.
type Destination struct {
	// Sink is slack, teams, email or webhook.
	Sink string `json:"sink"`
	// Channel is a Slack channel ID or name, posted to as the bot of
	// slack.tokenFile.
	Channel string `json:"channel,omitempty"`
	// WebhookURLFile holds a Slack incoming webhook's URL or a Teams
	// Workflows webhook's URL: such a URL is a credential, so it lives in
	// a file (a mounted Secret), never in the config.
	WebhookURLFile string `json:"webhookURLFile,omitempty"`
	// Addresses are the e-mail recipients.
	Addresses []string `json:"addresses,omitempty"`
	// URL is a generic webhook's, https (http only to a loopback address).
	URL string `json:"url,omitempty"`
	// Format is a generic webhook's: cloudevents (the default) or json.
	Format string `json:"format,omitempty"`
	// RatePerMinute overrides the section's ratePerMinute for this
	// destination (chat and e-mail only).
	RatePerMinute int `json:"ratePerMinute,omitempty"`
}

// key names a destination: routes that name the same place share one
// queue, one rate limit and one message per event.
func (d Destination) key() string {
	addrs := make([]string, len(d.Addresses))
	for i, a := range d.Addresses {
		addrs[i] = strings.ToLower(strings.TrimSpace(a))
	}
	slices.Sort(addrs)
	return strings.Join([]string{d.Sink, d.Channel, d.WebhookURLFile, strings.Join(addrs, ","), d.URL, d.Format}, "\x00")
}

// Matches says whether the route takes an event of kind about a session
// in cluster and namespace.
func (r Route) Matches(kind, cluster, namespace string) bool {
	return matchAny(r.Clusters, cluster) && matchAny(r.Namespaces, namespace) && matchAny(r.Kinds, kind)
}

func matchAny(patterns []string, s string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// target is a destination an event goes to, with the approvers of every
// matching route that names it.
type target struct {
	dest      *destination
	approvers string
}

type compiledRoute struct {
	Route
	dests []*destination
}

// routeTo is where an event goes: each destination once, in the order the
// routes name them.
func routeTo(routes []compiledRoute, kind, cluster, namespace string) []target {
	var out []target
	groups := map[*destination][]string{}
	for _, r := range routes {
		if !r.Matches(kind, cluster, namespace) {
			continue
		}
		for _, d := range r.dests {
			if _, seen := groups[d]; !seen {
				out = append(out, target{dest: d})
			}
			if r.Approvers != "" && !slices.Contains(groups[d], r.Approvers) {
				groups[d] = append(groups[d], r.Approvers)
			} else if groups[d] == nil {
				groups[d] = []string{}
			}
		}
	}
	for i := range out {
		out[i].approvers = strings.Join(groups[out[i].dest], ", ")
	}
	return out
}
