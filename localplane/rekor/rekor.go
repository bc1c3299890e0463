// Package rekor runs a real transparency log for tests: rekor-server on
// Trillian's log server and signer, on PostgreSQL, all on loopback, all
// stopped (by PID) and removed at the end.
package rekor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tower-dev/breakglass/localplane/tools"

	"github.com/tower-dev/breakglass/localplane/cluster"
	"github.com/tower-dev/breakglass/localplane/postgres"
)

// Log is a running Rekor.
type Log struct {
	// URL is Rekor's address.
	URL   string
	dir   string
	procs []*exec.Cmd
	port  int
	stops []func() error
}

// Binaries are what `make rekor` builds into bin/.
var Binaries = []string{"rekor-server", "trillian_log_server", "trillian_log_signer", "createtree"}

// Available says why a Rekor cannot be started here, or nil.
func Available() error {
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(tools.BinDir(), b)); err != nil {
			return fmt.Errorf("%s not in %s: run make rekor", b, tools.BinDir())
		}
	}
	return postgres.Available()
}

// Start starts PostgreSQL, Trillian and Rekor.
func Start(ctx context.Context) (_ *Log, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "breakglass-rekor-")
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir}
	defer func() {
		if err != nil {
			_ = l.Stop()
		}
	}()
	pgPort, err := l.startPostgres(ctx)
	if err != nil {
		return nil, err
	}
	uri := fmt.Sprintf("postgresql:///trillian?host=127.0.0.1&port=%d&user=postgres&sslmode=disable", pgPort)
	storage := []string{"--storage_system=postgresql", "--quota_system=postgresql", "--postgresql_uri=" + uri}
	rpc, err := l.startTrillian(ctx, "trillian_log_server", storage)
	if err != nil {
		return nil, err
	}
	if _, err := l.startTrillian(ctx, "trillian_log_signer", append(storage, "--force_master", "--election_system=noop", "--sequencer_interval=50ms")); err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, filepath.Join(tools.BinDir(), "createtree"), "--admin_server="+rpc).Output()
	if err != nil {
		return nil, fmt.Errorf("creating the Trillian tree: %w", err)
	}
	tree := strings.TrimSpace(string(out))
	if l.port, err = cluster.FreePort(); err != nil {
		return nil, err
	}
	host, rpcPort, _ := strings.Cut(rpc, ":")
	if err := l.start(ctx, "rekor-server", "serve", "--rekor_server.address=127.0.0.1", "--port="+strconv.Itoa(l.port),
		"--trillian_log_server.address="+host, "--trillian_log_server.port="+rpcPort, "--trillian_log_server.tlog_id="+tree,
		"--enable_retrieve_api=false", "--rekor_server.signer=memory", "--rekor_server.hostname=rekor.local",
		"--enabled_api_endpoints=getLogInfo,getPublicKey,getLogProof,createLogEntry,getLogEntryByIndex,getLogEntryByUUID,searchLogQuery"); err != nil {
		return nil, err
	}
	l.URL = "http://127.0.0.1:" + strconv.Itoa(l.port)
	if err := waitHTTP(ctx, l.URL+"/api/v1/log"); err != nil {
		return nil, fmt.Errorf("rekor-server: %w", err)
	}
	return l, nil
}

func (l *Log) start(ctx context.Context, bin string, args ...string) error {
	cmd := exec.Command(filepath.Join(tools.BinDir(), bin), args...)
	logFile, err := os.Create(filepath.Join(l.dir, bin+".log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	l.procs = append(l.procs, cmd)
	return nil
}

// startTrillian starts a Trillian binary and waits for its /healthz; it
// returns its gRPC address.
func (l *Log) startTrillian(ctx context.Context, bin string, args []string) (string, error) {
	rpcPort, err := cluster.FreePort()
	if err != nil {
		return "", err
	}
	httpPort, err := cluster.FreePort()
	if err != nil {
		return "", err
	}
	rpc := "127.0.0.1:" + strconv.Itoa(rpcPort)
	args = append(args, "--rpc_endpoint="+rpc, "--http_endpoint=127.0.0.1:"+strconv.Itoa(httpPort))
	if err := l.start(ctx, bin, args...); err != nil {
		return "", err
	}
	if err := waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/healthz", httpPort)); err != nil {
		return "", fmt.Errorf("%s: %w", bin, err)
	}
	return rpc, nil
}

// startPostgres starts a throwaway PostgreSQL, loads Trillian's schema and
// returns its port.
func (l *Log) startPostgres(ctx context.Context) (int, error) {
	pg, err := postgres.Start(l.dir)
	if err != nil {
		return 0, err
	}
	l.stops = append(l.stops, pg.Stop)
	if err := pg.Psql(ctx, "-c", "CREATE DATABASE trillian"); err != nil {
		return 0, err
	}
	schema, err := trillianSchema()
	if err != nil {
		return 0, err
	}
	if err := pg.Psql(ctx, "-d", "trillian", "-f", schema); err != nil {
		return 0, err
	}
	return pg.Port, nil
}

// trillianSchema is the PostgreSQL schema in the Trillian module that
// tools/rekor builds (downloaded with it).
func trillianSchema() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/google/trillian")
	cmd.Dir = filepath.Join(filepath.Dir(tools.BinDir()), "tools", "rekor")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding Trillian's module: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "storage", "postgresql", "schema", "storage.sql"), nil
}

func waitHTTP(ctx context.Context, url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s answered %d", url, resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Pause stops Rekor (SIGSTOP) so that calls to it time out; Resume lets it go on.
func (l *Log) Pause() error { return l.signalRekor(syscall.SIGSTOP) }

// Resume undoes Pause.
func (l *Log) Resume() error { return l.signalRekor(syscall.SIGCONT) }

func (l *Log) signalRekor(sig syscall.Signal) error {
	for _, p := range l.procs {
		if filepath.Base(p.Path) == "rekor-server" {
			return p.Process.Signal(sig)
		}
	}
	return errors.New("rekor-server is not running")
}

// Stop kills what Start started, by PID, newest first, and removes its files.
func (l *Log) Stop() error {
	var errs []error
	for i := len(l.procs) - 1; i >= 0; i-- {
		p := l.procs[i]
		_ = p.Process.Signal(syscall.SIGCONT)
		_ = p.Process.Kill()
		_ = p.Wait()
	}
	for i := len(l.stops) - 1; i >= 0; i-- {
		errs = append(errs, l.stops[i]())
	}
	errs = append(errs, os.RemoveAll(l.dir))
	return errors.Join(errs...)
}

// PublicKey is the log's public key (PEM), as its API serves it.
func (l *Log) PublicKey(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.URL+"/api/v1/log/publicKey", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the log's public key: %s", resp.Status)
	}
	return io.ReadAll(resp.Body)
}
