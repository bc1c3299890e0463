package cluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/manifests/sessionobjects"
)

// Namespace creates a namespace for one test and deletes it after.
func (c *Cluster) Namespace(t testing.TB, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), ns) })
	return name
}

// AppNodeName is the node app pods are bound to where no node runs them:
// a debug container goes only into a bound pod.
const AppNodeName = "node-1"

// AppPod creates an app's pod (labelled app=web) as its controller would,
// bound to AppNodeName (which runs nothing).
func (c *Cluster) AppPod(t testing.TB, ns, name string, volumes ...corev1.Volume) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName:           AppNodeName,
			ServiceAccountName: "default",
			Containers:         []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.2"}},
			Volumes:            volumes,
		},
	}
	if err := c.Client.Create(context.Background(), pod); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return pod
}

// RunningPod creates an app's pod (labelled app=web) on the virtual node,
// where its container runs as a local process: a pod a session can attach to.
func (c *Cluster) RunningPod(t testing.TB, ns, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: NodeName,
			Containers: []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.2", Command: []string{"sleep", "3600"}}}},
	}
	if err := c.Client.Create(context.Background(), pod); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return pod
}

// DebugSecurityContext is the one security context a debug container may have.
func DebugSecurityContext() *corev1.SecurityContext { return sessionobjects.DebugSecurityContext() }

// DebugContainer is a debug container in the shape the policies allow.
func DebugContainer(name, image string) corev1.EphemeralContainer {
	return sessionobjects.DebugContainer(name, image)
}

// GrantedPortal grants the portal a session's debug role in ns, as the
// relay does at a start (the grant made by the portal itself, with ttl),
// and returns the portal's clients once the authorizer lets them add debug
// containers there.
func (c *Cluster) GrantedPortal(t testing.TB, ns, session, ttl string) *User {
	t.Helper()
	ctx := context.Background()
	portal, err := c.Portal()
	if err != nil {
		t.Fatal(err)
	}
	rb := ProbeGrant(session, ttl)
	rb.Namespace = ns
	if err := portal.Client.Create(ctx, rb); err != nil {
		t.Fatalf("the portal's grant in %s: %v", ns, err)
	}
	if err := portal.WaitAllowed(ctx, ns, "patch", "pods", "ephemeralcontainers"); err != nil {
		t.Fatal(err)
	}
	return portal
}
