// Package api is the relay's decisions API: people request, approve, deny
// and review debug sessions. Each handler decodes, asks a decision (who may
// do this to this Session, and what changes), makes the lifecycle move and
// sends the notification. The decisions are plain functions over a Caller
// and a Session (may.go, moves.go, check.go), table-tested without a
// server; what runs a session (start, terminal, end, extensions) is the
// relay's live side, which asks the same decisions.
package api

import (
	"slices"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Caller is the person behind a request, as their token says.
type Caller struct {
	// ID is who they are: the token's issuer and subject, "issuer#subject".
	// It does not change with their email or display name, and it alone
	// decides separation of duty: a second spelling of an address, a case
	// change or a re-issued email is still the same ID.
	ID string
	// Name is how they are shown (the username claim, by default the
	// verified email); it decides nothing.
	Name   string
	Groups []string
	// Expires is when the token runs out: a stream opened with it ends then.
	Expires time.Time
}

// IdentityOf is the identity a token's issuer and subject name.
func IdentityOf(issuer, subject string) string { return issuer + "#" + subject }

// IsRequester reports whether c asked for s: by identity; a Session made
// without one (not by this relay) by name.
func (c Caller) IsRequester(s *v1alpha1.Session) bool { return s.IsRequester(c.Name, c.ID) }

// Action is something a person may do to sessions.
type Action string

// The actions; each is granted per cluster and namespace.
const (
	// ActionRequest asks for sessions and starts one's own.
	ActionRequest Action = "request"
	// ActionApprove approves or denies others' sessions, and watches them.
	ActionApprove Action = "approve"
	// ActionBreakGlass starts a session without approval; it is reviewed after.
	ActionBreakGlass Action = "breakGlass"
	// ActionEnd ends others' sessions.
	ActionEnd Action = "end"
	// ActionReview reviews others' ended sessions.
	ActionReview Action = "review"
	// ActionViewSensitive plays recordings of process-access sessions.
	ActionViewSensitive Action = "viewSensitive"
)

// Actions are all the actions, each once.
var Actions = []Action{ActionRequest, ActionApprove, ActionBreakGlass, ActionEnd, ActionReview, ActionViewSensitive}

// Permission gives members of Groups the Actions in Namespaces of Clusters.
// "*" matches any cluster or namespace.
type Permission struct {
	Groups     []string `json:"groups"`
	Clusters   []string `json:"clusters,omitempty"`
	Namespaces []string `json:"namespaces"`
	Actions    []Action `json:"actions"`
}

// Permissions are what the relay's configuration grants, to groups.
type Permissions []Permission

// Can says whether c may do a in namespace ns of cluster.
func (ps Permissions) Can(c Caller, a Action, cluster, ns string) bool {
	for _, p := range ps {
		if !slices.Contains(p.Actions, a) || !Matches(p.Namespaces, ns) {
			continue
		}
		if !p.In(cluster) {
			continue
		}
		if p.Holds(c) {
			return true
		}
	}
	return false
}

// Sees says whether c has any permission in ns: enough to list and read
// its sessions.
func (ps Permissions) Sees(c Caller, cluster, ns string) bool {
	return slices.ContainsFunc(Actions, func(a Action) bool { return ps.Can(c, a, cluster, ns) })
}

// SeesAny says whether c has any permission anywhere: enough to follow the
// event feed, which shows each session only to those who see it.
func (ps Permissions) SeesAny(c Caller) bool {
	return slices.ContainsFunc(ps, func(p Permission) bool { return len(p.Actions) > 0 && p.Holds(c) })
}

// In says whether p applies on cluster.
func (p Permission) In(cluster string) bool {
	return len(p.Clusters) == 0 || Matches(p.Clusters, cluster)
}

// Holds says whether c is in one of p's groups.
func (p Permission) Holds(c Caller) bool {
	return slices.ContainsFunc(p.Groups, func(g string) bool { return slices.Contains(c.Groups, g) })
}

// Matches says whether list names s, or "*" stands for every name.
func Matches(list []string, s string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, s)
}
