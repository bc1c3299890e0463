// Package integration runs the plane's admission policies and roles on a
// real kube-apiserver and etcd, one per profile, installed from the files
// the chart ships.
package integration

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

// clusters holds one running control plane per profile.
var clusters map[policies.Profile]*cluster.Cluster

// The namespaces the suite's clusters name in params.nodeAccessNamespaces.
const (
	reachNamespace      = "reach"
	effectiveNamespace  = "effective"
	nodeAgentsNamespace = "node-agents"
)

var nodeAgentNamespaces = []string{reachNamespace, effectiveNamespace, nodeAgentsNamespace}

func TestMain(m *testing.M) { os.Exit(prereq.Run(m, run, prereq.ControlPlane...)) }

func run(m *testing.M) int {
	log.SetLogger(logr.Discard())
	started, err := cluster.StartEach(context.Background(), func(p policies.Profile) cluster.Options {
		// TestProcessReach and TestEffectiveSecurity hold the debug policies
		// to pods on the node's namespaces or unconfined: on Flight such a
		// pod lives only where the chart lets node agents live.
		return cluster.Options{Profile: p, DebugImages: []string{cluster.DebugImage}, NodeAccessNamespaces: nodeAgentNamespaces}
	}, nil)
	clusters = started
	defer func() {
		if bare != nil {
			if err := bare.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "stopping the baseline control plane: %v\n", err)
			}
		}
		if err := cluster.StopEach(clusters); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// eachProfile runs f once per profile, as a subtest named for it.
func eachProfile(t *testing.T, f func(t *testing.T, p policies.Profile, c *cluster.Cluster)) {
	for _, p := range policies.Profiles {
		t.Run(string(p), func(t *testing.T) { f(t, p, clusters[p]) })
	}
}
