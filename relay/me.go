package relay

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/relay/api"
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
	// Expires is when the caller's token runs out: a page renews its
	// sign-in before then, so that its calls and event stream go on.
	Expires *metav1.Time `json:"expires,omitempty"`
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
	Namespaces []string     `json:"namespaces"`
	Actions    []api.Action `json:"actions"`
}

func (s *Server) me(w http.ResponseWriter, _ *http.Request, c api.Caller) error {
	out := Me{Name: c.Name, ID: c.ID, Groups: c.Groups, Clusters: []ClusterView{},
		IdleSeconds: int(s.cfg.Limits.Idle.Seconds()), DisconnectSeconds: int(s.cfg.Limits.Disconnect.Seconds())}
	if !c.Expires.IsZero() {
		out.Expires = &metav1.Time{Time: c.Expires}
	}
	if out.Groups == nil {
		out.Groups = []string{}
	}
	for _, cl := range s.cfg.Clusters {
		v := ClusterView{Name: cl.Name, Tier: cl.Tier, NeedsApproval: cl.NeedsApproval(), Allowed: []Allowed{}}
		for _, p := range s.sessions.Permissions {
			if p.In(cl.Name) && p.Holds(c) {
				v.Allowed = append(v.Allowed, Allowed{Namespaces: p.Namespaces, Actions: p.Actions})
			}
		}
		out.Clusters = append(out.Clusters, v)
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}
