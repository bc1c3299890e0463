package recording

import (
	"fmt"
	"strings"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Ref names the session a recording belongs to: the cluster (as the relay
// names it), the namespace, the name and the Session's UID. The UID keeps a
// deleted and re-created Session from ever sharing a recording with the
// first; the cluster keeps two clusters with a Session of the same name
// apart in one bucket.
type Ref struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// RefOf is the recording reference of a Session on cluster.
func RefOf(cluster string, s *v1alpha1.Session) Ref {
	return Ref{Cluster: cluster, Namespace: s.Namespace, Name: s.Name, UID: string(s.UID)}
}

// Check refuses a reference with a part missing or one that could reach
// out of its own prefix.
func (r Ref) Check() error {
	for _, p := range []struct{ what, v string }{{"cluster", r.Cluster}, {"namespace", r.Namespace}, {"name", r.Name}, {"UID", r.UID}} {
		if p.v == "" || p.v == "." || p.v == ".." || strings.ContainsAny(p.v, "/\\\x00") {
			return fmt.Errorf("a recording's %s must be a plain non-empty name, not %q", p.what, p.v)
		}
	}
	return nil
}

// Prefix is where the session's evidence lives in the store.
func (r Ref) Prefix() string {
	return "sessions/" + r.Cluster + "/" + r.Namespace + "/" + r.Name + "/" + r.UID + "/"
}

func (r Ref) String() string {
	return r.Cluster + "/" + r.Namespace + "/" + r.Name + " (UID " + r.UID + ")"
}

// Names checks that m is the manifest of the session r names: a manifest
// copied under another session's key, or from another cluster, is refused.
func (m Manifest) Names(r Ref) error {
	got := Ref{Cluster: m.Cluster, Namespace: m.Namespace, Name: m.Name, UID: m.UID}
	if m.Version < 2 {
		return fmt.Errorf("the manifest (version %d) names only the session %q, not its cluster and UID: it cannot be matched to %s", m.Version, m.Session, r)
	}
	if got != r {
		return fmt.Errorf("the manifest is the recording of %s, not of %s", got, r)
	}
	return nil
}
