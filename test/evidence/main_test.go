// Package evidence_test runs the recording store against versitygw, a real
// S3 server that enforces Object Lock, built from its module into bin/.
package evidence_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/test/harness/prereq"
	"github.com/tower-dev/breakglass/test/harness/s3server"
)

const (
	locked   = "evidence"
	unlocked = "no-lock"
)

var server *s3server.Server

func TestMain(m *testing.M) { os.Exit(prereq.Run(m, run, prereq.VersityGW)) }

func run(m *testing.M) int {
	var err error
	server, err = s3server.Start("127.0.0.1")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = server.Stop() }()
	if err := server.CreateBucket(locked, true); err != nil {
		fmt.Fprintln(os.Stderr, "creating buckets:", err)
		return 1
	}
	if err := server.CreateBucket(unlocked, false); err != nil {
		fmt.Fprintln(os.Stderr, "creating buckets:", err)
		return 1
	}
	return m.Run()
}

func newStore(bucket string) (*recording.S3, error) { return server.Store(bucket) }
