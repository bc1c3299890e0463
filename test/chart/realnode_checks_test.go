package chart_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	relayclient "github.com/tower-dev/breakglass/relay/client"
	"github.com/tower-dev/breakglass/relay/wire"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/s3server"
)

// appDeployment runs the app: a Deployment of one web server.
func appDeployment(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, img string) *corev1.Pod {
	t.Helper()
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			// httpd as PID 1 ignores SIGTERM: do not wait 30 s for it.
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "web", Image: img, Command: []string{"/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/bin"},
				SecurityContext: cluster.DebugSecurityContext()}}}},
	}}
	if err := c.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	return runningAppPod(ctx, t, c, ns)
}

// runningAppPod waits for the app's one running pod.
func runningAppPod(ctx context.Context, t *testing.T, c *cluster.Cluster, ns string) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "web"}); err != nil {
			return false, nil
		}
		for i, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				found = &pods.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the app has no running pod: %v\n%s", err, podReport(ctx, c))
	}
	return found
}

// startSession: alice asks, bob approves, alice starts; it waits until the
// session is Active.
func startSession(ctx context.Context, t *testing.T, c *cluster.Cluster, asAlice, asBob *relayclient.Client, podName string) relayclient.Target {
	t.Helper()
	v, err := asAlice.Request(ctx, relayclient.Target{Cluster: e2eCluster, Namespace: "shop"},
		wire.Request{Pod: podName, Mode: v1alpha1.ModeLive, Duration: "15m", Reason: "the checkout page is slow"})
	if err != nil {
		t.Fatalf("alice's request: %v", err)
	}
	target := relayclient.Target{Cluster: e2eCluster, Namespace: "shop", Name: v.Name}
	if _, err := asBob.Approve(ctx, target, wire.Decision{Comment: "go ahead"}); err != nil {
		t.Fatalf("bob's approval: %v", err)
	}
	if _, err := asAlice.Start(ctx, target); err != nil {
		t.Fatalf("alice's start: %v\n%s", err, podReport(ctx, c))
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		v, err := asAlice.Get(ctx, target)
		return err == nil && v.Status.Phase == v1alpha1.PhaseActive, nil
	})
	if err != nil {
		t.Fatalf("session %s is not Active: %v\n%s", target.Name, err, podReport(ctx, c))
	}
	return target
}

func waitEnded(t *testing.T, c *cluster.Cluster, target relayclient.Target) *v1alpha1.Session {
	t.Helper()
	return c.WaitSession(t, target.Namespace, target.Name, 2*time.Minute, "not ended with evidence",
		func(s *v1alpha1.Session) bool { return cluster.Ended(s) && s.Status.Evidence != nil }, nil)
}

func requireGrantGone(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, session string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		grants := &rbacv1.RoleBindingList{}
		if err := c.Client.List(ctx, grants, client.InNamespace(ns), client.MatchingLabels{v1alpha1.SessionLabel: session}); err != nil {
			return false, nil
		}
		return len(grants.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("session %s's grant is still there: %v", session, err)
	}
}

// requireRecycled waits until the debugged pod is gone and its Deployment
// runs a new one.
func requireRecycled(ctx context.Context, t *testing.T, c *cluster.Cluster, ns string, old *corev1.Pod) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p := &corev1.Pod{}
		err := c.Client.Get(ctx, client.ObjectKeyFromObject(old), p)
		return apierrors.IsNotFound(err) || (err == nil && p.UID != old.UID), nil
	})
	if err != nil {
		t.Fatalf("the debugged pod %s was not recycled: %v", old.Name, err)
	}
	if p := runningAppPod(ctx, t, c, ns); len(p.Spec.EphemeralContainers) != 0 {
		t.Fatalf("the new pod %s has debug containers", p.Name)
	}
}

// requireRecording reads the session's recording from the bucket at the
// version and SHA-256 its Session records, each file checked against the
// manifest, and looks for want in it.
func requireRecording(ctx context.Context, t *testing.T, s *s3server.Server, sess *v1alpha1.Session, want string) {
	t.Helper()
	store, err := s.Store("evidence")
	if err != nil {
		t.Fatal(err)
	}
	ref := recording.RefOf(e2eCluster, sess)
	m, _, err := recording.ReadManifest(ctx, store, ref, sess.Status.Evidence)
	if err != nil {
		t.Fatalf("the recording's manifest: %v", err)
	}
	var all bytes.Buffer
	for name := range m.Files {
		b, err := recording.ReadFile(ctx, store, ref, m, name)
		if err != nil {
			t.Fatalf("recording file %s: %v", name, err)
		}
		all.Write(b)
	}
	if !strings.Contains(all.String(), want) {
		t.Fatalf("the recording (%d files) lacks %q", len(m.Files), want)
	}
}

func requireServing(t *testing.T, ip string) {
	t.Helper()
	resp, err := http.Head("http://" + ip + ":8080/sh")
	if err != nil {
		t.Fatalf("the app does not answer: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the app answers %s", resp.Status)
	}
}

// requireRunsImage checks that a Deployment of the plane runs, from the
// image by digest.
func requireRunsImage(ctx context.Context, t *testing.T, c *cluster.Cluster, deployment, img string) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: v1alpha1.Namespace, Name: deployment}, d); err != nil {
		t.Fatal(err)
	}
	if d.Status.AvailableReplicas < 1 || d.Spec.Template.Spec.Containers[0].Image != img {
		t.Fatalf("%s: %d available, image %s, want %s", deployment, d.Status.AvailableReplicas, d.Spec.Template.Spec.Containers[0].Image, img)
	}
}

// serviceIP is the cluster IP of the plane's Service name.
func serviceIP(ctx context.Context, t *testing.T, c *cluster.Cluster, name string) string {
	t.Helper()
	svc, err := c.Kube.CoreV1().Services(v1alpha1.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Fatalf("no cluster IP for Service %s: %v", name, err)
	}
	return svc.Spec.ClusterIP
}

func pod(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func equalCommand(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// podReport is every pod's phase and waiting reasons, for a failure message.
func podReport(ctx context.Context, c *cluster.Cluster) string {
	pods, err := c.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "%s/%s %s", p.Namespace, p.Name, p.Status.Phase)
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Waiting != nil {
				fmt.Fprintf(&b, " %s: %s %s", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
			}
			if s.LastTerminationState.Terminated != nil {
				fmt.Fprintf(&b, " %s last ended: %s %q", s.Name, s.LastTerminationState.Terminated.Reason, s.LastTerminationState.Terminated.Message)
				// What a crashed container said last, through the kubelet.
				tail := int64(10)
				logs, err := c.Kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: s.Name, Previous: true, TailLines: &tail}).DoRaw(ctx)
				if err != nil {
					logs = []byte(err.Error())
				}
				fmt.Fprintf(&b, "\n    %s", strings.ReplaceAll(strings.TrimSpace(string(logs)), "\n", "\n    "))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// waitOutput waits until the terminal's output holds want.
func waitOutput(out *cluster.SyncBuffer, want string, attached <-chan error) error {
	deadline := time.After(time.Minute)
	for !strings.Contains(strings.ReplaceAll(out.String(), "\r", ""), want) {
		select {
		case err := <-attached:
			return fmt.Errorf("the terminal closed before %q: %w\n%s", want, err, out.String())
		case <-deadline:
			return fmt.Errorf("no %q within a minute:\n%s", want, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// requireRelayReplicas checks that the relay's StatefulSet runs n replicas
// from the image by digest.
func requireRelayReplicas(ctx context.Context, t *testing.T, c *cluster.Cluster, img string, n int32) {
	t.Helper()
	st := &appsv1.StatefulSet{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: v1alpha1.Namespace, Name: "breakglass-relay"}, st); err != nil {
		t.Fatal(err)
	}
	if st.Status.ReadyReplicas != n || st.Spec.Template.Spec.Containers[0].Image != img {
		t.Fatalf("the relay: %d ready, image %s, want %d from %s", st.Status.ReadyReplicas, st.Spec.Template.Spec.Containers[0].Image, n, img)
	}
}

// holderClient reaches the relay replica running the session, by its
// pod's IP: the test bed has no cluster DNS, so the replicas cannot pass
// terminals to each other by name here (test/relay does that).
func holderClient(ctx context.Context, t *testing.T, c *cluster.Cluster, target relayclient.Target, tok string, trust *tls.Config) *relayclient.Client {
	t.Helper()
	s := &v1alpha1.Session{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: target.Namespace, Name: target.Name}, s); err != nil {
		t.Fatal(err)
	}
	p := pod(ctx, t, c, v1alpha1.Namespace, s.Status.Relay)
	return &relayclient.Client{BaseURL: "https://" + p.Status.PodIP + ":8443", Token: tok, TLS: trust}
}

// otherReplicaClient is a client of a relay replica that does not run the
// session.
func otherReplicaClient(ctx context.Context, t *testing.T, c *cluster.Cluster, target relayclient.Target, tok string, trust *tls.Config) *relayclient.Client {
	t.Helper()
	s := &v1alpha1.Session{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: target.Namespace, Name: target.Name}, s); err != nil {
		t.Fatal(err)
	}
	pods, err := c.Kube.CoreV1().Pods(v1alpha1.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=breakglass-relay"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Name != s.Status.Relay && p.Status.PodIP != "" {
			return &relayclient.Client{BaseURL: "https://" + p.Status.PodIP + ":8443", Token: tok, TLS: trust}
		}
	}
	t.Fatalf("no relay replica besides %s", s.Status.Relay)
	return nil
}

// typeInto attaches to the session, types line and waits for want.
func typeInto(ctx context.Context, t *testing.T, as *relayclient.Client, target relayclient.Target, line, want string) {
	t.Helper()
	out := &cluster.SyncBuffer{}
	inR, inW := io.Pipe()
	attached := make(chan error, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { attached <- as.Attach(ctx, target, inR, out, io.Discard, nil) }()
	go fmt.Fprint(inW, line) // aside: an attach that fails never reads it
	if err := waitOutput(out, "\n"+want, attached); err != nil {
		t.Fatal(err)
	}
}

// waitResumed waits until another replica took the session up (a rolling
// update hands it over) and it runs there, Active.
func waitResumed(ctx context.Context, t *testing.T, c *cluster.Cluster, target relayclient.Target) *v1alpha1.Session {
	t.Helper()
	return c.WaitSession(t, target.Namespace, target.Name, 2*time.Minute, "not taken up after the upgrade", func(s *v1alpha1.Session) bool {
		return s.Status.Phase == v1alpha1.PhaseActive && s.Status.Resumes > 0 && s.Status.Relay != "" && s.Status.Released == nil
	}, func() string { return podReport(ctx, c) })
}
