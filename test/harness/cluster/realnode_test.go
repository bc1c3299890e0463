package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// TestRealNodeDebugContainer runs the debug image, pulled from the registry
// by digest, as a debug container on the real kubelet (Flight policies in
// force) and checks from inside it, through the kubelet's real attach, what
// runc really applied: uid 65532, a read-only root, no capabilities, no
// new privileges, and no ServiceAccount token.
func TestRealNodeDebugContainer(t *testing.T) {
	ctx := context.Background()
	c, ref := StartRealNode(t)
	debugImage := ref.String()
	if err := c.SetParams(ctx, policies.DefaultParams(debugImage)); err != nil {
		t.Fatal(err)
	}
	ns := c.Namespace(t, "shop")
	pod := c.ServingPod(t, ns, "web-1", debugImage)
	portal := c.GrantedPortal(t, ns, "s1", "30m")
	// The policies reach the API server's informers a moment after the update.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := portal.AddDebugContainer(ctx, ns, pod.Name, DebugContainer("breakglass-s1", debugImage))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("adding the debug container: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := c.WaitContainerRunning(ctx, ns, pod.Name, "breakglass-s1"); err != nil {
		t.Fatal(err)
	}
	out, err := portal.AttachRun(ctx, ns, pod.Name, "breakglass-s1",
		"id -u; touch /x 2>&1; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; ls /var/run/secrets/kubernetes.io 2>&1; echo done-$((1+1))\n", "done-2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"\n65532\r", "Read-only file system", "CapEff:\t0000000000000000", "NoNewPrivs:\t1", "No such file or directory"} {
		if !strings.Contains(out, want) {
			t.Errorf("the debug container's output lacks %q:\n%s", want, out)
		}
	}
	got, err := c.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := got.Status.EphemeralContainerStatuses; len(s) != 1 || !strings.HasSuffix(s[0].ImageID, "@"+ref.DigestStr()) {
		t.Errorf("the node reports the debug container ran %v, want the digest %s", s, ref.DigestStr())
	}
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("the app pod is %s after the debug container", got.Status.Phase)
	}
}

// TestRealNodeHeldCopy runs a held copy on the real node, as the portal
// holding a grant makes it (the copy policies in force): containerd mounts
// the debug image as an image volume into the app's container, whose
// entrypoint is replaced by that image's sleep, so the copy's app container
// runs without running the app (nothing serves its port), and the debug
// container beside it is attached to.
func TestRealNodeHeldCopy(t *testing.T) {
	ctx := context.Background()
	c, ref := StartRealNode(t)
	if err := c.SetParams(ctx, policies.DefaultParams(ref.String())); err != nil {
		t.Fatal(err)
	}
	ns := c.Namespace(t, "shop")
	// The app serves on 8080: its copy, held, must not.
	target := c.ServingPod(t, ns, "web-1", ref.String())
	portal := c.GrantedPortal(t, ns, "s1", "30m")
	s := sessiontest.Make(ns, "s1").Mode(v1alpha1.ModeHeldCopy).Pod(target.Name).Obj()
	cp, err := sessionobjects.CopyPod(target, s, "breakglass-s1", ref.String(), false, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The params reach the API server's informers a moment after the update.
	Eventually(t, 30*time.Second, "the held copy admitted", func() (bool, error) {
		err := portal.Client.Create(ctx, cp.DeepCopy())
		return err == nil, err
	})
	for _, container := range []string{"web", "breakglass-s1"} {
		if err := c.WaitContainerRunning(ctx, ns, cp.Name, container); err != nil {
			t.Fatalf("the held copy's %s: %v", container, err)
		}
	}
	out, err := portal.AttachRun(ctx, ns, cp.Name, "breakglass-s1",
		"wget -q -O /dev/null http://127.0.0.1:8080/sh && echo app-served || echo app-held; echo done-$((1+1))\n", "done-2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "\napp-held") || strings.Contains(out, "\napp-served") {
		t.Errorf("the held copy's app container serves, or the check did not run:\n%s", out)
	}
}
