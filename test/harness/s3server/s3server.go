// Package s3server runs versitygw, a real S3 server that enforces Object
// Lock (built from its module into bin/ by make tools), for tests.
package s3server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tower-dev/breakglass/localplane/tools"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// The root credentials every test server has.
const (
	AccessKey = "breakglass-test"
	SecretKey = "breakglass-test-secret"
)

// Server is a running versitygw.
type Server struct {
	// Endpoint is its URL (http://host:port).
	Endpoint string
	cmd      *exec.Cmd
	dir      string
}

// Start runs versitygw on host (127.0.0.1, or an address pods reach) at a
// free port, storing in a folder of its own.
func Start(host string) (*Server, error) {
	bin := filepath.Join(tools.BinDir(), "versitygw")
	if _, err := os.Stat(bin); err != nil {
		return nil, errors.New("versitygw not found: run `make tools` first (it builds it from module sources)")
	}
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "breakglass-s3")
	if err != nil {
		return nil, err
	}
	s := &Server{Endpoint: "http://" + net.JoinHostPort(host, strconv.Itoa(port)), dir: dir}
	for _, d := range []string{"data", "versions"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	s.cmd = exec.Command(bin, "--port", net.JoinHostPort(host, strconv.Itoa(port)), "posix",
		"--versioning-dir", filepath.Join(dir, "versions"), filepath.Join(dir, "data"))
	s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+AccessKey, "ROOT_SECRET_KEY="+SecretKey)
	if err := s.cmd.Start(); err != nil {
		_ = s.Stop()
		return nil, err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), time.Second)
		if err == nil {
			_ = c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			_ = s.Stop()
			return nil, fmt.Errorf("versitygw is not listening: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Store is the recording store on bucket, with the root credentials.
func (s *Server) Store(bucket string) (*recording.S3, error) {
	return recording.NewS3(context.Background(), recording.S3Options{
		Bucket: bucket, Region: "us-east-1", Endpoint: s.Endpoint, PathStyle: true, AccessKey: AccessKey, SecretKey: SecretKey,
	})
}

// CreateBucket creates bucket, with Object Lock if locked.
func (s *Server) CreateBucket(bucket string, locked bool) error {
	st, err := s.Store(bucket)
	if err != nil {
		return err
	}
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	if locked {
		in.ObjectLockEnabledForBucket = aws.Bool(true)
	}
	_, err = st.Client.CreateBucket(context.Background(), in)
	return err
}

// Stop ends the server and removes what it stored.
func (s *Server) Stop() error {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	return os.RemoveAll(s.dir)
}
