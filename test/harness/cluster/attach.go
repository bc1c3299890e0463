package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// ServingPod creates an app's pod (labelled app=web) for the real node: a
// web server (busybox httpd on 8080, from image) as a restricted non-root
// container, and waits until it runs. The scheduler places it.
func (c *Cluster) ServingPod(t testing.TB, ns, name, image string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: image, Command: []string{"/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/bin"},
			Ports:           []corev1.ContainerPort{{ContainerPort: 8080}},
			SecurityContext: DebugSecurityContext(),
		}}},
	}
	// The namespace's default ServiceAccount comes from the controllers a
	// moment after the namespace.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Client.Create(ctx, pod.DeepCopy())
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "serviceaccount") {
			return false, nil
		}
		return true, err
	})
	if err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	if err := c.WaitContainerRunning(ctx, ns, name, "web"); err != nil {
		t.Fatal(err)
	}
	got, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
