package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/vap"
)

// ordinaryWorker makes the cluster's ordinary requests in one namespace:
// pods as the ReplicaSet controller creates them, and RoleBindings as a
// namespace admin writes them. None of it is the plane's business.
type ordinaryWorker struct {
	ns         string
	controller *cluster.User
	admin      *cluster.User
	owner      metav1.OwnerReference
	n          int
}

func newOrdinaryWorker(b *testing.B, c *cluster.Cluster, ns string) *ordinaryWorker {
	ctx := context.Background()
	c.Namespace(b, ns)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9c4", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: ordinaryPodSpec()},
		},
	}
	if err := c.Client.Create(ctx, rs); err != nil {
		b.Fatal(err)
	}
	// cluster-admin bound in one namespace: the aggregated admin and view
	// roles are empty here, with no controller manager to aggregate them.
	adminBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "team-admin", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "dana@example.com"}},
	}
	reader := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "pods/log", "configmaps", "services"},
			Verbs: []string{"get", "list", "watch"}}},
	}
	for _, o := range []client.Object{adminBinding, reader} {
		if err := c.Client.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	// The ReplicaSet controller's own identity, allowed by the API server's
	// bootstrap roles, as kube-controller-manager runs it.
	controller, err := c.AsServiceAccountByName("kube-system", "replicaset-controller")
	if err != nil {
		b.Fatal(err)
	}
	admin, err := c.As("dana@example.com")
	if err != nil {
		b.Fatal(err)
	}
	// The authorizer learns of her binding a moment after it is written.
	if err := debugsession.WaitAllowed(ctx, admin.Kube, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create",
		Group: rbacv1.GroupName, Resource: "rolebindings"}, 30*time.Second); err != nil {
		b.Fatalf("dana may not bind roles in %s: %v", ns, err)
	}
	b.Cleanup(func() {
		ctx := context.Background()
		_ = c.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns))
		_ = c.Client.DeleteAllOf(ctx, &rbacv1.RoleBinding{}, client.InNamespace(ns))
	})
	return &ordinaryWorker{ns: ns, controller: controller, admin: admin, owner: metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}
}

// ordinaryPodSpec is an app's pod as a Deployment's template gives it: two
// containers, probes, resources, a volume.
func ordinaryPodSpec() corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{
			{Name: "web", Image: "registry.example/shop/web:1.2", Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}},
			{Name: "metrics", Image: "registry.example/shop/exporter:0.9"},
		},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
}

// createPod creates one pod as the ReplicaSet controller does and returns
// how long the request took.
func (w *ordinaryWorker) createPod(b *testing.B) time.Duration {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-7d9c4-", Namespace: w.ns,
			Labels:          map[string]string{"app": "web", "pod-template-hash": "7d9c4"},
			OwnerReferences: []metav1.OwnerReference{w.owner}},
		Spec: ordinaryPodSpec(),
	}
	start := time.Now()
	if _, err := w.controller.Kube.CoreV1().Pods(w.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		b.Fatalf("the ReplicaSet controller's pod create in %s: %v", w.ns, err)
	}
	return time.Since(start)
}

// createRoleBinding creates one RoleBinding as a namespace admin does and
// returns how long the request took.
func (w *ordinaryWorker) createRoleBinding(b *testing.B) time.Duration {
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("viewer-%d", w.n), Namespace: w.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: fmt.Sprintf("viewer-%d@example.com", w.n)}},
	}
	w.n++
	start := time.Now()
	if _, err := w.admin.Kube.RbacV1().RoleBindings(w.ns).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil {
		b.Fatalf("a namespace admin's RoleBinding create in %s: %v", w.ns, err)
	}
	return time.Since(start)
}

// installPlaneIn installs the whole Flight set (every policy, its binding,
// and the signature webhook's registration) bound to namespace ns alone,
// under names of their own, and waits until it is in force there. The
// webhook's URL answers nothing: a request its match condition let through
// would fail, so the benchmark also proves the webhook never sees ordinary
// work.
func installPlaneIn(b *testing.B, c *cluster.Cluster, ns, suffix string) {
	ctx := context.Background()
	// A pod the webhook's match condition sends to it on an image change,
	// made before the webhook and the reserved-names policy exist.
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "breakglass-probe", Image: "registry.example/probe:1"}}},
	}
	if err := c.Client.Create(ctx, probe); err != nil {
		b.Fatal(err)
	}

	pairs, err := vap.BuildAll(policies.Flight, policies.DefaultParams(cluster.DebugImage))
	if err != nil {
		b.Fatal(err)
	}
	// Both chart-bound policies bound, the dearer setting (by default
	// neither is): ns is not protected, and has not opted in.
	pairs = vap.Bind(pairs, vap.ChartValues{ProtectedNamespaces: []string{"payments"}, RequireNamespaceOptIn: true})
	var objs []client.Object
	for _, p := range pairs {
		p.Policy.Name += suffix
		objs = append(objs, p.Policy)
	}
	for _, p := range pairs {
		if p.Binding == nil {
			b.Fatalf("policy %s has no binding", p.Policy.Name)
		}
		p.Binding.Name, p.Binding.Spec.PolicyName = p.Policy.Name, p.Policy.Name
		bindTo(p.Binding, ns)
		objs = append(objs, p.Binding)
	}
	wh := manifests.WebhookConfiguration(admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate-debug-image")})
	wh.Name += suffix
	wh.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	objs = append(objs, wh)
	for _, o := range objs {
		if err := c.Client.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Client.Delete(context.Background(), o) })
	}

	// In force when one of them refuses a 2h grant there and the probe's image
	// change reaches the (unanswering) webhook.
	grant := cluster.ProbeGrant("s-probe", "2h")
	grant.Namespace = ns
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.Client.Create(ctx, grant.DeepCopy(), client.DryRunAll)
		if err == nil {
			err = errors.New("a 2h grant was admitted")
		}
		// Which of the grant policies answers first varies.
		if strings.Contains(err.Error(), suffix+"' denied request") {
			changed := probe.DeepCopy()
			changed.Spec.Containers[0].Image = fmt.Sprintf("registry.example/probe:%d", time.Now().UnixNano())
			err = c.Client.Update(ctx, changed, client.DryRunAll)
			if err == nil {
				err = errors.New("an image change of a breakglass- container did not reach the webhook")
			}
			if strings.Contains(err.Error(), "failed calling webhook") {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the plane is not in force in %s after 60s: %v", ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// BenchmarkOrdinaryWork measures what the plane costs the cluster's
// ordinary work: pod creates by the ReplicaSet controller and RoleBinding
// creates by a namespace admin, on one API server, taking turns between a
// namespace the whole plane is bound to and two it is not (the second
// shows what the run's noise alone makes of a ratio). The policies that
// see every pod or binding must let these go in their match conditions.
func BenchmarkOrdinaryWork(b *testing.B) {
	c := bareCluster(b)
	stamp := time.Now().UnixNano()
	plane := newOrdinaryWorker(b, c, fmt.Sprintf("ordinary-plane-%d", stamp))
	none := newOrdinaryWorker(b, c, fmt.Sprintf("ordinary-none-%d", stamp))
	noneAgain := newOrdinaryWorker(b, c, fmt.Sprintf("ordinary-none2-%d", stamp))
	installPlaneIn(b, c, plane.ns, fmt.Sprintf("-bench-%d", stamp))

	if path := os.Getenv("ORDINARY_CPUPROFILE"); path != "" {
		defer profileAPIServer(b, c, path)()
	}

	workers := []*ordinaryWorker{plane, none, noneAgain}
	pods := make([]time.Duration, len(workers))
	bindings := make([]time.Duration, len(workers))
	turn := 0
	for b.Loop() {
		// Each goes first in turn, so none gains from a warm cache.
		for i := range workers {
			k := (turn + i) % len(workers)
			pods[k] += workers[k].createPod(b)
		}
		for i := range workers {
			k := (turn + i) % len(workers)
			bindings[k] += workers[k].createRoleBinding(b)
		}
		turn = (turn + 1) % len(workers)
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(per(pods[0]), "µs/pod-plane")
	b.ReportMetric(per(pods[1]), "µs/pod-none")
	b.ReportMetric(float64(pods[0])/float64(pods[1]), "ratio-pods-plane/none")
	b.ReportMetric(float64(pods[2])/float64(pods[1]), "ratio-pods-none/none")
	b.ReportMetric(per(bindings[0]), "µs/rolebinding-plane")
	b.ReportMetric(per(bindings[1]), "µs/rolebinding-none")
	b.ReportMetric(float64(bindings[0])/float64(bindings[1]), "ratio-rolebindings-plane/none")
	b.ReportMetric(float64(bindings[2])/float64(bindings[1]), "ratio-rolebindings-none/none")
}

// profileAPIServer takes the API server's CPU profile for the next 20
// seconds into path (ORDINARY_CPUPROFILE), for where its time goes; the
// returned func waits for it.
func profileAPIServer(b *testing.B, c *cluster.Cluster, path string) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		raw, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "20").
			Timeout(time.Minute).DoRaw(context.Background())
		if err == nil {
			err = os.WriteFile(path, raw, 0o644)
		}
		if err != nil {
			b.Errorf("the API server's profile: %v", err)
		}
	}()
	return func() { <-done }
}
