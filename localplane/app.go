package localplane

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/localplane/cluster"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
)

// demoAppUserID is the user the demo app runs as on the real node: not
// v1alpha1.DebugUserID.
const demoAppUserID int64 = 1000

// demoApp creates the demo app's Deployment. On the virtual node, with no
// controller-manager, it keeps one pod of it running as its ReplicaSet
// would: a recycled pod comes back under a new name. On a real node the
// controllers do that, and the app runs from image. It returns the first
// pod's name.
func demoApp(ctx context.Context, c *cluster.Cluster, ns, image string, realNode bool) (string, error) {
	labels := map[string]string{"app": "web"}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{NodeName: cluster.NodeName, Containers: []corev1.Container{{
			Name: "web", Image: "registry.example/shop/web:1.2",
			Command: []string{"sh", "-c", "while true; do echo serving orders; sleep 30; done"},
		}}},
	}
	if realNode {
		// The app runs as a user of its own: process access, which the
		// README walks through, is refused for an app that runs as the
		// debug user (debug.same-user).
		sc := sessionobjects.RestrictedSecurityContext(demoAppUserID)
		sc.RunAsGroup, sc.ReadOnlyRootFilesystem = ptr.To(demoAppUserID), ptr.To(true)
		tmpl.Spec = corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []corev1.Container{{
			Name: "web", Image: image, SecurityContext: sc,
			Command: []string{"/bin/sh", "-c", "while true; do echo serving orders; sleep 30; done"},
		}}}
	}
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return "", err
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}
	if err := c.Client.Create(ctx, dep); err != nil {
		return "", err
	}
	if realNode {
		return firstPod(ctx, c, ns, labels)
	}
	keep := func() (string, error) {
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return "", err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				return p.Name, nil
			}
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%x", time.Now().UnixNano()&0xfffff), Namespace: ns, Labels: labels},
			Spec: *tmpl.Spec.DeepCopy()}
		return pod.Name, c.Client.Create(ctx, pod)
	}
	first, err := keep()
	if err != nil {
		return "", err
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
				_, _ = keep()
			}
		}
	}()
	return first, nil
}

// firstPod waits for the Deployment's first pod to run.
func firstPod(ctx context.Context, c *cluster.Cluster, ns string, labels map[string]string) (string, error) {
	for {
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return "", err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				return p.Name, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
