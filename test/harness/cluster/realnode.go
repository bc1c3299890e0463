package cluster

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/tower-dev/breakglass/internal/image"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

// StartRealNode starts a Flight control plane with the real node, stopped
// when the test ends, and pushes the debug image (busybox, for this
// machine's architecture) to its registry.
func StartRealNode(tb testing.TB) (*Cluster, name.Digest) {
	tb.Helper()
	prereq.Need(tb, append(prereq.ControlPlane, prereq.RealNode...)...)
	c, err := Start(context.Background(), Options{Profile: policies.Flight, RealNode: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Error(err)
		}
	})
	img, err := image.BuildDebug("/bin/busybox", runtime.GOARCH, time.Unix(0, 0))
	if err != nil {
		tb.Fatal(err)
	}
	ref, err := c.Registry.PushImage("breakglass/debug", "1", img)
	if err != nil {
		tb.Fatal(err)
	}
	return c, ref
}
