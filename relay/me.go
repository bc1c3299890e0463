package relay

import (
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Me is the caller as the relay sees them and what they may do where: what
// the console shows and offers. The relay checks every call again; a
// button the page shows is never a permission.
type Me struct {
	Name     string        `json:"name"`
	ID       string        `json:"id"`
	Groups   []string      `json:"groups"`
	Clusters []ClusterView `json:"clusters"`
	// IdleSeconds and DisconnectSeconds are the limits that end a session.
	IdleSeconds       int `json:"idleSeconds"`
	DisconnectSeconds int `json:"disconnectSeconds"`
}

// ClusterView is one cluster and the caller's permissions in it.
type ClusterView struct {
	Name          string    `json:"name"`
	Tier          Tier      `json:"tier"`
	NeedsApproval bool      `json:"needsApproval"`
	Allowed       []Allowed `json:"allowed"`
}

// Allowed is what the caller may do in some namespaces ("*": any).
type Allowed struct {
	Namespaces []string `json:"namespaces"`
	Actions    []Action `json:"actions"`
}

func (s *Server) me(w http.ResponseWriter, _ *http.Request, c Caller) error {
	out := Me{Name: c.Name, ID: c.ID, Groups: c.Groups, Clusters: []ClusterView{},
		IdleSeconds: int(s.cfg.Limits.Idle.Seconds()), DisconnectSeconds: int(s.cfg.Limits.Disconnect.Seconds())}
	if out.Groups == nil {
		out.Groups = []string{}
	}
	for _, cl := range s.cfg.Clusters {
		v := ClusterView{Name: cl.Name, Tier: cl.Tier, NeedsApproval: cl.NeedsApproval(), Allowed: []Allowed{}}
		for _, p := range s.cfg.Permissions {
			if len(p.Clusters) > 0 && !matches(p.Clusters, cl.Name) {
				continue
			}
			if slices.ContainsFunc(p.Groups, func(g string) bool { return slices.Contains(c.Groups, g) }) {
				v.Allowed = append(v.Allowed, Allowed{Namespaces: p.Namespaces, Actions: p.Actions})
			}
		}
		out.Clusters = append(out.Clusters, v)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// LiveView is when a held session's idle and disconnect limits end it, as
// this relay counts them now.
type LiveView struct {
	Viewers int `json:"viewers"`
	// Attached is who has the terminal open: the requester typing, the
	// approvers watching.
	Attached   []Attached  `json:"attached"`
	IdleEndsAt metav1.Time `json:"idleEndsAt"`
	// AloneEndsAt is when the disconnect limit ends a session with no
	// terminal open (the requester's or a watcher's).
	AloneEndsAt *metav1.Time `json:"aloneEndsAt,omitempty"`
	// Moderated says the requester's input reaches the shell only while a
	// moderator (an approver) watches; InputHeld that none watches now.
	Moderated bool `json:"moderated,omitempty"`
	InputHeld bool `json:"inputHeld,omitempty"`
}

// Attached is one person with the session's terminal open.
type Attached struct {
	Name   string `json:"name"`
	Typing bool   `json:"typing"`
}

// liveView is nil for a session this relay does not hold.
func (s *Server) liveView(key sessionKey) *LiveView {
	held := s.holding(key)
	if held == nil {
		return nil
	}
	lastInput, viewers, alone := held.live.Activity()
	v := &LiveView{Viewers: viewers, Attached: held.people(), IdleEndsAt: metav1.NewTime(lastInput.Add(s.cfg.Limits.Idle.Duration))}
	if t := s.clusters[key.cluster]; t != nil && t.Moderates(key.namespace) {
		v.Moderated, v.InputHeld = true, held.moderators() == 0
	}
	if viewers == 0 {
		at := metav1.NewTime(alone.Add(s.cfg.Limits.Disconnect.Duration))
		v.AloneEndsAt = &at
	}
	return v
}
