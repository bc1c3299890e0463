package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// RunSuite is the run of a suite's TestMain (prereq.Run's) on one test
// cluster: it starts the cluster with opts into *cl, runs the tests and
// stops it, whatever they did. A cluster that does not start runs no test.
func RunSuite(m *testing.M, opts Options, cl **Cluster) int {
	log.SetLogger(logr.Discard())
	c, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*cl = c
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test cluster:", err)
		}
	}()
	return m.Run()
}
