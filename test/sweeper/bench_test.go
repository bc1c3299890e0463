package sweeper_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/measure"
)

// BenchmarkGrantExpiry measures the delay between a grant's TTL running out
// and its deletion, over 1,000 grants whose TTLs run out a second apart.
// Time moves on the fake clock one second every 10 ms of real time; a
// grant's delay is the real time from the step that crossed its expiry to
// its deletion. (Kyverno's cleanup controller scans once a minute.)
func BenchmarkGrantExpiry(b *testing.B) {
	const n = 1000
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		ns := namespace(b, fmt.Sprintf("expiry-%d", i))
		portal, err := cl.Portal()
		if err != nil {
			b.Fatal(err)
		}
		grants := make([]*rbacv1.RoleBinding, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := w; j < n; j += 8 {
					rb := cluster.ProbeGrant(fmt.Sprintf("s%d", j), (15*time.Minute + time.Duration(j)*time.Second).String())
					rb.Namespace = ns
					if err := portal.Client.Create(context.Background(), rb); err != nil {
						errs <- err
						return
					}
					grants[j] = rb
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		start := grants[0].CreationTimestamp.Time
		for _, g := range grants {
			if g.CreationTimestamp.Before(&grants[0].CreationTimestamp) {
				start = g.CreationTimestamp.Time
			}
		}
		fake := clockAt(start)

		var mu sync.Mutex
		type step struct{ fake, real time.Time }
		var steps []step
		var delays []time.Duration
		done := make(chan struct{})
		r := startSweeper(b, sweeper.Options{Clock: fake, Expired: func(rb *rbacv1.RoleBinding, _ time.Duration) {
			now := time.Now()
			expiry, _ := sweeper.GrantExpiry(rb)
			mu.Lock()
			defer mu.Unlock()
			k := sort.Search(len(steps), func(i int) bool { return !steps[i].fake.Before(expiry) })
			if k < len(steps) {
				delays = append(delays, now.Sub(steps[k].real))
			}
			if len(delays) == n {
				close(done)
			}
		}})
		time.Sleep(2 * time.Second) // the sweeper lists the grants and waits on its clock for each
		b.StartTimer()
	steps:
		for {
			select {
			case <-done:
				break steps
			case <-time.After(10 * time.Millisecond):
			}
			fake.Step(time.Second)
			mu.Lock()
			steps = append(steps, step{fake.Now(), time.Now()})
			mu.Unlock()
			if len(steps) > 3*3600 {
				b.Fatalf("only %d of %d grants deleted after three hours of fake time", len(delays), n)
			}
		}
		b.StopTimer()
		r.stop()
		ms := func(q float64) float64 { return measure.Ms(measure.Quantile(delays, q)) }
		b.ReportMetric(ms(0.5), "p50-ms")
		b.ReportMetric(ms(0.99), "p99-ms")
		b.ReportMetric(ms(1), "max-ms")
		if ms(0.99) > 1000 {
			b.Errorf("p99 delay %.0f ms, the target is 1 s", ms(0.99))
		}
	}
}
