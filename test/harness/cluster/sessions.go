package cluster

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// WaitSession waits up to within until the Session ns/name holds cond and
// returns it as it was then. A wait that fails says what it waited for,
// the Session's last status and what explain adds (what the relays logged,
// the pods; nil for nothing).
func (c *Cluster) WaitSession(t testing.TB, ns, name string, within time.Duration, what string, cond func(*v1alpha1.Session) bool, explain func() string) *v1alpha1.Session {
	t.Helper()
	s := &v1alpha1.Session{}
	err := Within(within, func() (bool, error) {
		if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return false, err
		}
		return cond(s), nil
	})
	if err != nil {
		more := ""
		if explain != nil {
			more = "\n" + explain()
		}
		t.Fatalf("session %s/%s: %s: %v; its status: %+v%s", ns, name, what, err, s.Status, more)
	}
	return s
}

// Ended says a Session has ended.
func Ended(s *v1alpha1.Session) bool { return s.Status.Phase == v1alpha1.PhaseEnded }
