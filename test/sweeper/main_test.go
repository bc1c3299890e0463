// Package sweeper_test runs the sweeper against a real kube-apiserver and
// etcd with the Flight plane installed, as the sweeper's own ServiceAccount,
// with an injected clock.
package sweeper_test

import (
	"os"
	"testing"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

var (
	cl *cluster.Cluster
)

func TestMain(m *testing.M) {
	os.Exit(prereq.Run(m, run, append(prereq.ControlPlane, prereq.Promtool)...))
}

func run(m *testing.M) int {
	return cluster.RunSuite(m, cluster.Options{Profile: policies.Flight, DebugImages: []string{cluster.DebugImage}}, &cl)
}
