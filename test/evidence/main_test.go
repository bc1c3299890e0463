// Package evidence_test runs the recording store against versitygw, a real
// S3 server that enforces Object Lock, built from its module into bin/.
package evidence_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/test/cluster"
)

const (
	accessKey = "breakglass-test"
	secretKey = "breakglass-test-secret"
	locked    = "evidence"
	unlocked  = "no-lock"
)

var endpoint string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	bin := filepath.Join(cluster.AssetsDir(), "versitygw")
	if _, err := os.Stat(bin); err != nil {
		fmt.Fprintln(os.Stderr, "versitygw not found: run `make tools` first (it builds it from module sources)")
		return 1
	}
	dir, err := os.MkdirTemp("", "breakglass-s3")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	port, err := cluster.FreePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
	for _, d := range []string{"data", "versions"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	cmd := exec.Command(bin, "--port", fmt.Sprintf("127.0.0.1:%d", port), "posix",
		"--versioning-dir", filepath.Join(dir, "versions"), filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+accessKey, "ROOT_SECRET_KEY="+secretKey)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	if err := waitListening(port); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := createBuckets(); err != nil {
		fmt.Fprintln(os.Stderr, "creating buckets:", err)
		return 1
	}
	return m.Run()
}

func newStore(bucket string) (*recording.S3, error) {
	return recording.NewS3(context.Background(), recording.S3Options{
		Bucket: bucket, Region: "us-east-1", Endpoint: endpoint, PathStyle: true, AccessKey: accessKey, SecretKey: secretKey,
	})
}

func createBuckets() error {
	s, err := newStore(locked)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if _, err := s.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(locked), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		return err
	}
	_, err = s.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(unlocked)})
	return err
}

func waitListening(port int) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("versitygw is not listening: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
