// Package sweeper_test runs the sweeper against a real kube-apiserver and
// etcd with the Flight plane installed, as the sweeper's own ServiceAccount,
// with an injected clock.
package sweeper_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/cluster"
	"github.com/tower-dev/breakglass/test/prereq"
)

var (
	cl *cluster.Cluster
)

func TestMain(m *testing.M) {
	os.Exit(prereq.Run(m, run, append(prereq.ControlPlane, prereq.Promtool)...))
}

func run(m *testing.M) int {
	log.SetLogger(logr.Discard())
	var err error
	cl, err = cluster.Start(context.Background(), cluster.Options{Profile: policies.Flight, DebugImages: []string{cluster.DebugImage}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := cl.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}()
	return m.Run()
}
