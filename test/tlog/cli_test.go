package tlog_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
)

// verifyCLI runs `kubectl-breakglass recording verify DIR ARGS` from source.
func verifyCLI(dir string, args ...string) (string, error) {
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	cmd := exec.Command("go", append([]string{"run", "./cmd/kubectl-breakglass", "recording", "verify", dir}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	return string(out), err
}
