package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestRealNodeServices: on the real node, a pod finds a Service by its
// short name and by its full one through CoreDNS, reaches the pod behind it
// through kube-proxy's rules for its cluster IP, and finds the `kubernetes`
// Service (the one every in-cluster client dials) at its cluster IP; a
// name outside the cluster is not answered.
func TestRealNodeServices(t *testing.T) {
	ctx := context.Background()
	c, ref := StartRealNode(t)
	ns := c.Namespace(t, "shop")
	c.ServingPod(t, ns, "web-1", ref.String())
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if err := c.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}

	// The pod is made only once the Service is (a ServiceAccount must exist
	// first too); its shell says what it found, and its log is read back.
	script := "wget -q -O /dev/null http://web/sh && echo short-name-reached; " +
		"wget -q -O /dev/null http://web." + ns + ".svc.cluster.local/sh && echo full-name-reached; " +
		"nslookup kubernetes.default.svc.cluster.local; " +
		"nslookup example.com >/dev/null 2>&1 || echo outside-unanswered; echo done"
	client := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: ns},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "client", Image: ref.String(), Command: []string{"/bin/sh", "-c", script},
				SecurityContext: DebugSecurityContext()}}},
	}
	Eventually(t, 30*time.Second, "the client pod made", func() (bool, error) {
		err := c.Client.Create(ctx, client.DeepCopy())
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "serviceaccount") {
			return false, err
		}
		if err != nil {
			t.Fatal(err)
		}
		return true, nil
	})
	var phase corev1.PodPhase
	Eventually(t, 2*time.Minute, "the client pod ended", func() (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, "client", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, err := c.Kube.CoreV1().Pods(ns).GetLogs("client", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := string(logs)
	if phase != corev1.PodSucceeded {
		t.Fatalf("the client pod %s:\n%s", phase, got)
	}
	for _, want := range []string{"short-name-reached", "full-name-reached", "Address: " + KubernetesServiceIP, "outside-unanswered", "done"} {
		if !strings.Contains(got, want) {
			t.Errorf("the client's output lacks %q:\n%s", want, got)
		}
	}
}
