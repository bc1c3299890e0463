package prereq

import (
	"testing"

	"github.com/tower-dev/breakglass/localplane/tools"
)

func TestMissingNamesEachProgramAndItsTarget(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	if tools.BinDir() != dir {
		t.Fatalf("tools.BinDir is %s, want $KUBEBUILDER_ASSETS %s", tools.BinDir(), dir)
	}
	here := Program{Name: "here", Target: "x", found: func() bool { return true }}
	if err := Missing(here); err != nil {
		t.Fatalf("a program that is there: %v", err)
	}
	err := Missing(here, inBin("etcd", "tools"), onPath("no-such-command-anywhere"))
	want := "missing etcd (make tools), no-such-command-anywhere (make debian-packages)"
	if err == nil || err.Error() != want {
		t.Fatalf("Missing: %v, want %q", err, want)
	}
	if err := Missing(inRepo("this file", "none", "test", "harness", "prereq", "prereq.go")); err != nil {
		t.Fatalf("a file in the repository: %v", err)
	}
}
