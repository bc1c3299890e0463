// Package postgres starts a throwaway PostgreSQL from Debian's packages, for
// the suites whose real parts keep their state in one (Trillian under
// Rekor, Backstage's backend).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/tower-dev/breakglass/localplane/cluster"
)

// Server is a running PostgreSQL that trusts every local connection as
// user postgres.
type Server struct {
	Port int
	bin  string
	data string
}

// Available says why PostgreSQL cannot be started here, or nil.
func Available() error {
	_, err := binDir()
	return err
}

func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL is not installed (make debian-packages, or apt-get install -y postgresql)")
}

// Start initializes a cluster in dir (as the postgres user when running as
// root: PostgreSQL refuses root; dir is handed to that user, who must be
// able to reach it) and starts it on a free loopback port.
// Stop it with Stop, whatever ctx does.
func Start(dir string) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, data: filepath.Join(dir, "pgdata")}
	sock := filepath.Join(dir, "pgsock")
	for _, d := range []string{s.data, sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	if os.Geteuid() == 0 {
		pgUser, err := user.Lookup("postgres")
		if err != nil {
			return nil, err
		}
		uid, _ := strconv.Atoi(pgUser.Uid)
		gid, _ := strconv.Atoi(pgUser.Gid)
		for _, d := range []string{dir, s.data, sock} {
			if err := os.Chown(d, uid, gid); err != nil {
				return nil, err
			}
		}
	}
	if out, err := s.command("initdb", "-D", s.data, "-A", "trust", "-U", "postgres").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if s.Port, err = cluster.FreePort(); err != nil {
		return nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", s.Port, sock)
	if out, err := s.command("pg_ctl", "-D", s.data, "-o", opts, "-l", filepath.Join(s.data, "log"), "-w", "start").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("starting PostgreSQL: %w\n%s", err, out)
	}
	return s, nil
}

// command runs one of PostgreSQL's programs as its own user. Not bound to
// a context: stopping PostgreSQL must work after a test's has ended.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	bin := filepath.Join(s.bin, name)
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", bin}, args...)...)
	}
	return exec.Command(bin, args...)
}

// Psql runs psql as postgres with args, stopping at the first error.
func (s *Server) Psql(ctx context.Context, args ...string) error {
	base := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-q"}
	if out, err := exec.CommandContext(ctx, filepath.Join(s.bin, "psql"), append(base, args...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("psql %v: %w\n%s", args, err, out)
	}
	return nil
}

// Stop stops the server at once (its data is thrown away with its folder).
func (s *Server) Stop() error {
	if out, err := s.command("pg_ctl", "-D", s.data, "-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
		return fmt.Errorf("stopping PostgreSQL: %w\n%s", err, out)
	}
	return nil
}
