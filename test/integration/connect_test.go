package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// stream opens exec or attach on a pod the way kubectl does, over SPDY
// (POST) or WebSocket (GET), and returns the error that ends it.
func stream(t *testing.T, u *cluster.User, ns, pod, sub, container string, websocket bool) error {
	t.Helper()
	req := u.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource(sub)
	opts := &corev1.PodExecOptions{Container: container, Stdin: true, Stdout: true, TTY: true, Command: []string{"sh"}}
	if sub == "attach" {
		req = req.VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec)
	} else {
		req = req.VersionedParams(opts, scheme.ParameterCodec)
	}
	var exec remotecommand.Executor
	var err error
	if websocket {
		exec, err = remotecommand.NewWebSocketExecutor(u.Config, "GET", req.URL().String())
	} else {
		exec, err = remotecommand.NewSPDYExecutor(u.Config, "POST", req.URL())
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader(""), Stdout: &out, Tty: true})
	if err == nil {
		t.Fatalf("%s to a pod with no node succeeded", sub)
	}
	return err
}

// notAdmission is what the API server says after admission allowed a
// connection to a pod bound to a node that does not exist (AppNodeName):
// admission said yes.
const notAdmission = `"` + cluster.AppNodeName + `" not found`

func wantStreamRefused(t *testing.T, err error, want string) {
	t.Helper()
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("want a refusal saying %q, got %v", want, err)
	}
}

// TestExecAndAttach connects to pods on the real API server. A pod bound to
// a node that does not exist lets admission decide and then fails, so an
// admitted connection ends with notAdmission.
func TestExecAndAttach(t *testing.T) {
	eachProfile(t, func(t *testing.T, profile policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "connect")
		appPod(t, c, ns, "web-1")
		admin := mustUser(t)(c.As("alice", "system:masters"))
		portal := mustUser(t)(c.Portal())
		grant(t, c, ns, "s-connect", v1alpha1.DebugRole)
		wantAdmitted(t, addDebugContainer(t, portal, ns, "web-1", debugContainer("breakglass-s1"), false))

		for _, ws := range []bool{false, true} {
			path := "SPDY POST"
			if ws {
				path = "WebSocket GET"
			}
			t.Run("exec by a cluster admin over "+path, func(t *testing.T) {
				err := stream(t, admin, ns, "web-1", "exec", "web", ws)
				if profile == policies.Flight {
					wantStreamRefused(t, err, "[exec.never] exec is disabled on this cluster")
					return
				}
				wantStreamRefused(t, err, notAdmission)
			})
			t.Run("exec by the portal over "+path, func(t *testing.T) {
				// No grant holds exec: RBAC refuses before admission.
				wantStreamRefused(t, stream(t, portal, ns, "web-1", "exec", "breakglass-s1", ws), "cannot")
			})
			t.Run("the portal attaches to its debug container over "+path, func(t *testing.T) {
				wantStreamRefused(t, stream(t, portal, ns, "web-1", "attach", "breakglass-s1", ws), notAdmission)
			})
			t.Run("the portal attaches to the app container over "+path, func(t *testing.T) {
				wantStreamRefused(t, stream(t, portal, ns, "web-1", "attach", "web", ws), "[attach.debug-container]")
			})
			t.Run("a cluster admin attaches to a debug container over "+path, func(t *testing.T) {
				err := stream(t, admin, ns, "web-1", "attach", "breakglass-s1", ws)
				if profile == policies.Flight {
					wantStreamRefused(t, err, "[attach.portal-only]")
					return
				}
				wantStreamRefused(t, err, notAdmission)
			})
		}
	})
}
