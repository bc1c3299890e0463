package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

var (
	bareOnce sync.Once
	bare     *cluster.Cluster
	bareErr  error
)

// bareCluster is a control plane with the CRDs, roles and identities but no
// admission policies: the baseline for what the policies cost.
func bareCluster(b *testing.B) *cluster.Cluster {
	bareOnce.Do(func() {
		bare, bareErr = cluster.Start(context.Background(), cluster.Options{Profile: policies.Flight, WithoutPolicies: true, DebugImages: []string{cluster.DebugImage}})
	})
	if bareErr != nil {
		b.Fatal(bareErr)
	}
	return bare
}

// patcher adds one compliant debug container per call, as the portal, to
// pods it creates 20 at a time (a pod's ephemeral containers only grow).
type patcher struct {
	c    *cluster.Cluster
	ns   string
	user *cluster.User
	pod  string
	n    int
}

func newPatcher(b *testing.B, c *cluster.Cluster, ns string) *patcher {
	ctx := context.Background()
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	u := c.GrantedPortal(b, ns, "s-bench", "75m")
	return &patcher{c: c, ns: ns, user: u}
}

// ensurePod makes the pod the next debug container goes into: a new one
// every 20 containers (a pod's ephemeral containers only grow).
func (p *patcher) ensurePod(b *testing.B) {
	if p.pod != "" && p.n%20 != 0 {
		return
	}
	p.pod = fmt.Sprintf("web-%d", p.n/20)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.pod, Namespace: p.ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: cluster.AppNodeName, Containers: []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.2"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}
	if err := p.c.Client.Create(context.Background(), pod); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
}

// next adds a debug container and returns how long the PATCH took.
func (p *patcher) next(b *testing.B) time.Duration {
	ctx := context.Background()
	p.ensurePod(b)
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"ephemeralContainers": []corev1.EphemeralContainer{
		debugContainer(fmt.Sprintf("breakglass-%d", p.n))}}})
	start := time.Now()
	if _, err := p.user.Kube.CoreV1().Pods(p.ns).Patch(ctx, p.pod, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "ephemeralcontainers"); err != nil {
		b.Fatal(err)
	}
	p.n++
	return time.Since(start)
}

// BenchmarkEphemeralContainerPatch adds debug containers through the real
// API server with the Flight policies installed and without any, taking
// turns so both see the same machine, and reports the ratio.
func BenchmarkEphemeralContainerPatch(b *testing.B) {
	with := newPatcher(b, clusters[policies.Flight], fmt.Sprintf("bench-with-%d", time.Now().UnixNano()))
	without := newPatcher(b, bareCluster(b), fmt.Sprintf("bench-without-%d", time.Now().UnixNano()))
	var tWith, tWithout time.Duration
	first := true
	for b.Loop() {
		// Take turns going first, so neither side gains from a warm cache.
		if first {
			tWith += with.next(b)
			tWithout += without.next(b)
		} else {
			tWithout += without.next(b)
			tWith += with.next(b)
		}
		first = !first
	}
	b.ReportMetric(float64(tWith.Microseconds())/float64(b.N), "µs/patch-with-policies")
	b.ReportMetric(float64(tWithout.Microseconds())/float64(b.N), "µs/patch-without")
	b.ReportMetric(float64(tWith)/float64(tWithout), "ratio")
}
