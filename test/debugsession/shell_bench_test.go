package debugsession_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/live"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/measure"
)

// shellAsks is what the person types first, and shellAnswer what only the
// shell's answer holds (printf's octal escapes are not in the echo of the
// line typed): the first prompt, as a terminal can tell it.
const (
	shellAsks   = "printf '\\162\\145\\141\\144\\171\\n'\n"
	shellAnswer = "ready"
)

// BenchmarkTimeToShell: from the start of an approved session to the
// shell's first answer in its terminal, through the relay's Runner
// (grant, the authorizer's cache, the debug container, its start, the
// attach, with the recording and the Session's moves), against the same
// steps done by hand as the portal in the same run, taking turns: create
// the grant, wait until the authorizer allows it, add the debug container,
// read the pod every 25 ms until it runs (the portal may not watch pods),
// attach. Each side runs on a fresh pod of its own, 20 of each per
// iteration; p50 and p99 over all of them (make bench runs three
// iterations). On the virtual node.
func BenchmarkTimeToShell(b *testing.B) {
	timeToShell(b, shellBed{c: cl, debugImage: cluster.DebugImage, pod: func(tb testing.TB, ns string) { cl.RunningPod(tb, ns, "web-1") }})
}

// BenchmarkTimeToShellRealNode is BenchmarkTimeToShell on the real node
// (a kubelet on containerd and runc), with the debug image cached there:
// the app pods run the same image, pulled once.
func BenchmarkTimeToShellRealNode(b *testing.B) {
	ctx := context.Background()
	c, ref := cluster.StartRealNode(b)
	if err := c.SetParams(ctx, policies.DefaultParams(ref.String())); err != nil {
		b.Fatal(err)
	}
	if err := c.WaitEnforced(ctx); err != nil {
		b.Fatal(err)
	}
	timeToShell(b, shellBed{c: c, debugImage: ref.String(), pod: func(tb testing.TB, ns string) { c.ServingPod(tb, ns, "web-1", ref.String()) }})
}

// shellBed is where a time-to-shell benchmark runs: the cluster, its
// debug image, and how it makes the running app pod web-1 in a namespace.
type shellBed struct {
	c          *cluster.Cluster
	debugImage string
	pod        func(tb testing.TB, ns string)
}

func timeToShell(b *testing.B, bed shellBed) {
	const n = 20
	ctx := context.Background()
	r := runnerOn(b, bed.c, bed.debugImage, &recording.Dir{Root: b.TempDir()}, nil)
	portal, err := bed.c.Portal()
	if err != nil {
		b.Fatal(err)
	}
	var viaRelay, byHand []time.Duration
	for i := 0; b.Loop(); i++ {
		for k := range n {
			relayNS := bed.c.Namespace(b, fmt.Sprintf("shell-relay-%d-%d-%d", i, k, time.Now().UnixNano()%1000000))
			bed.pod(b, relayNS)
			s := approvedOn(b, bed.c, relayNS, false)
			handNS := bed.c.Namespace(b, fmt.Sprintf("shell-hand-%d-%d-%d", i, k, time.Now().UnixNano()%1000000))
			bed.pod(b, handNS)
			relayed := func() time.Duration {
				t0 := time.Now()
				run, err := live.Start(ctx, r, s)
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = run.End(ctx, "bench", v1alpha1.EndUser, "") }()
				firstAnswer(b, run, run.Output(requester))
				return time.Since(t0)
			}
			hand := func() time.Duration {
				t0 := time.Now()
				stop := shellByHand(b, portal, handNS, fmt.Sprintf("hand-%d-%d", i, k), bed.debugImage)
				defer stop()
				return time.Since(t0)
			}
			if k%2 == 0 {
				viaRelay, byHand = append(viaRelay, relayed()), append(byHand, hand())
			} else {
				byHand, viaRelay = append(byHand, hand()), append(viaRelay, relayed())
			}
		}
	}
	for _, q := range []struct {
		name string
		p    float64
	}{{"p50", 0.50}, {"p99", 0.99}} {
		r, h := measure.Quantile(viaRelay, q.p), measure.Quantile(byHand, q.p)
		b.ReportMetric(measure.Ms(r), "ms-"+q.name+"-relay")
		b.ReportMetric(measure.Ms(h), "ms-"+q.name+"-by-hand")
		b.ReportMetric(float64(r)/float64(h), "ratio-"+q.name)
	}
}

// shellByHand does as the portal what the relay does to give a shell, in
// the fewest steps, until the shell's first answer;
// stop detaches and takes the grant back.
func shellByHand(b *testing.B, portal *cluster.User, ns, name, debugImage string) (stop func()) {
	ctx := context.Background()
	grant := cluster.ProbeGrant(name, "15m")
	grant.Namespace = ns
	if err := portal.Client.Create(ctx, grant); err != nil {
		b.Fatal(err)
	}
	if err := portal.WaitAllowed(ctx, ns, "patch", "pods", "ephemeralcontainers"); err != nil {
		b.Fatal(err)
	}
	container := v1alpha1.DebugContainerName(name, 0)
	if err := portal.AddDebugContainer(ctx, ns, "web-1", cluster.DebugContainer(container, debugImage)); err != nil {
		b.Fatal(err)
	}
	// The portal may get a pod, not watch one: read it every 25 ms.
	for deadline := time.Now().Add(time.Minute); !running(b, portal, ns, container); time.Sleep(25 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%s not running within a minute", container)
		}
	}
	req := portal.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("web-1").SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewWebSocketExecutor(portal.Config, "GET", req.URL().String())
	if err != nil {
		b.Fatal(err)
	}
	sctx, end := context.WithCancel(ctx)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var streaming sync.WaitGroup
	streaming.Go(func() {
		_ = exec.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Tty: true})
		_ = outW.Close()
	})
	firstAnswer(b, inW, outR)
	return func() {
		end()
		_ = inW.Close()
		streaming.Wait()
		_ = portal.Client.Delete(context.Background(), grant)
	}
}

// firstAnswer types shellAsks until the shell's answer shows (what is
// typed before the attach is up goes nowhere, so it is typed again every
// 100 ms), and keeps out drained afterwards.
func firstAnswer(b *testing.B, in io.Writer, out io.Reader) {
	seen := make(chan struct{})
	go func() {
		var tail []byte
		buf := make([]byte, 4096)
		found := false
		for {
			n, err := out.Read(buf)
			if !found {
				tail = append(tail, buf[:n]...)
				if bytes.Contains(tail, []byte(shellAnswer)) {
					found = true
					close(seen)
				}
			}
			if err != nil {
				return
			}
		}
	}()
	timeout := time.After(time.Minute)
	for {
		if _, err := in.Write([]byte(shellAsks)); err != nil {
			b.Fatalf("typing: %v", err)
		}
		select {
		case <-seen:
			return
		case <-timeout:
			b.Fatal("no answer from the shell within a minute")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func running(b *testing.B, portal *cluster.User, ns, container string) bool {
	p, err := portal.Kube.CoreV1().Pods(ns).Get(context.Background(), "web-1", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range p.Status.EphemeralContainerStatuses {
		if st.Name == container {
			return st.State.Running != nil
		}
	}
	return false
}
