package cluster

import (
	"bufio"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

// TestVirtualNodeAttach attaches, as the portal holding a grant, to a debug
// container on the virtual node through the real API server (Flight
// policies in force), over WebSocket and over SPDY, and runs commands in it.
func TestVirtualNodeAttach(t *testing.T) {
	prereq.Need(t, prereq.ControlPlane...)
	image := DebugImage
	ctx := context.Background()
	c, err := Start(ctx, Options{Profile: policies.Flight, DebugImages: []string{image}, VirtualNode: true})
	if err != nil {
		t.Fatal(err)
	}
	nodeDir := c.NodeDir()
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
		// The node's folder held the API server's client key for it.
		if _, err := os.Stat(nodeDir); !os.IsNotExist(err) {
			t.Errorf("the virtual node's folder %s is still there after Stop: %v", nodeDir, err)
		}
	})
	ns := c.Namespace(t, "shop")
	portal := c.GrantedPortal(t, ns, "s1", "30m")
	// debugged is a pod with the debug container running: one per attach,
	// since a debug container's input closes with its first attach.
	debugged := func(t *testing.T, name string) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: NodeName,
				Containers: []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.2", Command: []string{"sleep", "3600"}}}},
		}
		if err := c.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if err := portal.AddDebugContainer(ctx, ns, name, DebugContainer("breakglass-s1", image)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Running != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the debug container is not reported running")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	for _, websocket := range []bool{true, false} {
		name := "SPDY"
		if websocket {
			name = "WebSocket"
		}
		t.Run(name, func(t *testing.T) {
			pod := "web-" + strings.ToLower(name)
			debugged(t, pod)
			req := portal.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("attach").
				VersionedParams(&corev1.PodAttachOptions{Container: "breakglass-s1", Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec)
			var exec remotecommand.Executor
			if websocket {
				exec, err = remotecommand.NewWebSocketExecutor(portal.Config, "GET", req.URL().String())
			} else {
				exec, err = remotecommand.NewSPDYExecutor(portal.Config, "POST", req.URL())
			}
			if err != nil {
				t.Fatal(err)
			}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			streamed := make(chan error, 1)
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			go func() {
				streamed <- exec.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Tty: true})
				outW.Close()
			}()
			lines := make(chan string, 64)
			go func() {
				sc := bufio.NewScanner(outR)
				for sc.Scan() {
					lines <- strings.TrimRight(sc.Text(), "\r")
				}
				close(lines)
			}()
			// The pty echoes input: match a whole output line the input does not contain.
			if _, err := io.WriteString(inW, "echo attached-$((40+2)) as $(id -u)\n"); err != nil {
				t.Fatal(err)
			}
			uid := v1alpha1.DebugUserID
			if os.Geteuid() != 0 {
				uid = int64(os.Geteuid()) // only root can run a container as another user
			}
			want := "attached-42 as " + strconv.FormatInt(uid, 10)
			timeout := time.After(20 * time.Second)
			for found := false; !found; {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("the stream ended before %q: %v", want, <-streamed)
					}
					found = IsLine(l, want)
				case <-timeout:
					t.Fatalf("no line %q within 20s", want)
				}
			}
			inW.Close() // stdin EOF is the detach
			select {
			case err := <-streamed:
				if err != nil {
					t.Fatalf("detaching: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the attach did not end after the detach")
			}
		})
	}
}
