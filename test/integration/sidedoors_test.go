package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// admissionRefusal is how the API server words a policy's refusal.
const admissionRefusal = "ValidatingAdmissionPolicy"

// portForward opens a port-forward to a pod as u, the way kubectl does over
// SPDY, and returns the error that refused it.
func portForward(t *testing.T, u *cluster.User, ns, pod string) error {
	t.Helper()
	rt, upgrader, err := spdy.RoundTripperFor(u.Config)
	if err != nil {
		t.Fatal(err)
	}
	url := u.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	conn, _, err := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", url).Dial(portforward.PortForwardProtocolV1Name)
	if err == nil {
		_ = conn.Close()
	}
	return err
}

// proxyGet GETs resource/name/proxy/path as u and returns, as an error, the
// API server's answer when it is not a success.
func proxyGet(t *testing.T, u *cluster.User, ns, resource, name, path string) error {
	t.Helper()
	r := u.Kube.CoreV1().RESTClient().Get().Resource(resource).Name(name).SubResource("proxy").Suffix(path)
	if ns != "" {
		r = r.Namespace(ns)
	}
	url := r.URL().String()
	rt, err := rest.TransportFor(u.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	return nil
}

// TestSideDoors tries every way other than exec into a production pod as a
// cluster admin: on Flight each is refused by the policy, saying what to do
// instead; on Ground each passes admission (and then fails only because the
// pod runs on no node, or the virtual node does not serve it).
func TestSideDoors(t *testing.T) {
	eachProfile(t, func(t *testing.T, p policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "side-doors")
		appPod(t, c, ns, "web-1")
		admin := mustUser(t)(c.As("alice", "system:masters"))
		flight := p == policies.Flight
		for _, tc := range []struct {
			name string
			try  func(t *testing.T) error
			want string // the refusal on Flight
		}{
			{"port-forward", func(t *testing.T) error { return portForward(t, admin, ns, "web-1") }, "[portforward.never]"},
			{"the pod proxy", func(t *testing.T) error { return proxyGet(t, admin, ns, "pods", "web-1:8080", "debug/pprof") }, "[proxy.pods]"},
			{"the service proxy", func(t *testing.T) error { return proxyGet(t, admin, ns, "services", "web:http", "admin") }, "[proxy.services]"},
			{"the kubelet's run", func(t *testing.T) error {
				return proxyGet(t, admin, "", "nodes", cluster.NodeName, "run/"+ns+"/web-1/web")
			}, "[proxy.nodes]"},
			{"the kubelet's exec", func(t *testing.T) error {
				return proxyGet(t, admin, "", "nodes", cluster.NodeName, "exec/"+ns+"/web-1/web?command=sh")
			}, "[proxy.nodes]"},
			{"a read-only path on another port of the node", func(t *testing.T) error {
				return proxyGet(t, admin, "", "nodes", cluster.NodeName+":9100", "metrics")
			}, "[proxy.nodes]"},
			{"a read-only path with a way out", func(t *testing.T) error {
				return proxyGet(t, admin, "", "nodes", cluster.NodeName, "metrics/../attach/"+ns+"/web-1/web")
			}, "[proxy.nodes]"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := tc.try(t)
				if flight {
					if err == nil || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("want a refusal saying %q, got %v", tc.want, err)
					}
					return
				}
				if err != nil && strings.Contains(err.Error(), admissionRefusal) {
					t.Fatalf("Ground refused it in admission: %v", err)
				}
			})
		}
		t.Run("the kubelet's metrics stay readable for monitoring", func(t *testing.T) {
			for _, path := range []string{"metrics", "stats/summary"} {
				// This control plane has no node of that name: the API server
				// looks it up only once admission said yes.
				err := proxyGet(t, admin, "", "nodes", cluster.NodeName, path)
				if err != nil && !strings.Contains(err.Error(), `nodes \"`+cluster.NodeName+`\" not found`) {
					t.Fatalf("%s: want admission to let it through to the node lookup, got %v", path, err)
				}
			}
		})
	})
}
