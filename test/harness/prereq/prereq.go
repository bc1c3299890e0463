// Package prereq names the programs the integration suites run, where each
// is found and the make target that builds or installs it.
//
// Run by hand (go test ./...), a suite whose programs are missing runs
// nothing, which go test reports as "[no tests to run]" (and -v says what
// to build), and a test that needs one skips saying so. Under make test,
// which builds them all and sets BREAKGLASS_REQUIRE_TOOLS, a missing one
// fails instead: nothing CI runs can pass by not running.
package prereq

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/localplane/tools"
)

// RequireEnv names the variable that, set to anything, makes a missing
// program a failure.
const RequireEnv = "BREAKGLASS_REQUIRE_TOOLS"

// A Program is something a suite runs that this repository does not hold.
type Program struct {
	Name string
	// Target is the make target that builds or installs it.
	Target string
	// found reports whether it is there.
	found func() bool
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// inBin is a program make builds into tools.BinDir.
func inBin(name, target string) Program {
	return Program{Name: name, Target: target, found: func() bool { return exists(filepath.Join(tools.BinDir(), name)) }}
}

// inRepo is a file a make target writes into the repository.
func inRepo(name, target string, path ...string) Program {
	return Program{Name: name, Target: target, found: func() bool { return exists(filepath.Join(append([]string{tools.Root}, path...)...)) }}
}

// onPath is a command from Debian's packages.
func onPath(command string) Program {
	return Program{Name: command, Target: "debian-packages", found: func() bool {
		_, err := exec.LookPath(command)
		return err == nil
	}}
}

var (
	// ControlPlane is kube-apiserver and etcd, which every cluster needs.
	ControlPlane = []Program{inBin("kube-apiserver", "tools"), inBin("etcd", "tools")}
	// Oldest is the oldest kube-apiserver the chart claims, the controller
	// manager of its version that writes policies' type-checking status,
	// and etcd.
	Oldest = []Program{inBin("kube-apiserver-1.30", "tools"), inBin("kube-controller-manager-1.30", "tools"), inBin("etcd", "tools")}
	// RealNode is the kubelet, the controllers, the scheduler, kube-proxy
	// and CoreDNS, on containerd 2 and Debian's runc.
	RealNode = []Program{inBin("kubelet", "node"), inBin("kube-controller-manager", "node"), inBin("kube-scheduler", "node"),
		inBin("kube-proxy", "node"), inBin("coredns", "node"), inBin("containerd", "node"), inBin("containerd-shim-runc-v2", "node"), onPath("runc")}
	// VersityGW is the S3 server with Object Lock the evidence is kept in.
	VersityGW = inBin("versitygw", "tools")
	// Cosign is the stock CLI that signs debug images and verifies bundles.
	Cosign = inBin("cosign", "tools")
	// Promtool tests the chart's alert rules.
	Promtool = inBin("promtool", "tools")
	// Kyverno is Kyverno's CLI, for what policy render --kyverno emits.
	Kyverno = inBin("kubectl-kyverno", "tools")
	// Rekor is Rekor v1 on Trillian, with Debian's PostgreSQL under it, and
	// Rekor v2.
	Rekor = []Program{inBin("rekor-server", "rekor"), inBin("trillian_log_server", "rekor"), inBin("rekor-server-v2", "tools"), Postgres}
	// Postgres is Debian's PostgreSQL, wherever its version put it.
	Postgres = Program{Name: "PostgreSQL", Target: "debian-packages", found: func() bool {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
		return len(found) > 0
	}}
	// OpenAPISpecs are the OpenAPI documents of every Kubernetes version
	// the chart claims, each in its own folder of tools.OpenAPIDir.
	OpenAPISpecs = inBin("openapi", "openapi-specs")
	// Images are the server and debug images make image builds, each an
	// index for linux/amd64 and linux/arm64 with its SBOM, in an OCI layout.
	Images = inBin("images/index.json", "image")
	// Console is the web console's bundle the relay embeds.
	Console = inRepo("the console's bundle", "console", "relay", "console", "dist", "index.html")
	// Browser is Debian's Chromium and Node, and the browser tests' npm
	// packages (playwright-core, xterm.js).
	Browser = []Program{onPath("chromium"), onPath("node"),
		inRepo("test/browser's npm packages", "browser", "test", "browser", "node_modules", ".package-lock.json")}
	// Backstage is the demo app built with Tower's plugins, and Node.js 22.
	Backstage = []Program{inRepo("the Backstage app", "backstage", "backstage", "packages", "app", "dist", "index.html"),
		inBin("node22/bin/node", "backstage")}
)

// Missing says which of programs is not there and how to get each, or
// returns nil.
func Missing(programs ...Program) error {
	var missing []string
	for _, p := range programs {
		if !p.found() {
			missing = append(missing, fmt.Sprintf("%s (make %s)", p.Name, p.Target))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return errors.New("missing " + strings.Join(missing, ", "))
}

func required() bool { return os.Getenv(RequireEnv) != "" }

// Need skips t, or under make test fails it, when one of programs is
// missing.
func Need(t testing.TB, programs ...Program) {
	t.Helper()
	if err := Missing(programs...); err != nil {
		if required() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// Run is a suite's TestMain: run(m) when every one of programs is there;
// otherwise none of its tests, or under make test a failure.
func Run(m *testing.M, run func(*testing.M) int, programs ...Program) int {
	err := Missing(programs...)
	if err == nil {
		return run(m)
	}
	if required() {
		fmt.Fprintf(os.Stderr, "%v; make test builds them all\n", err)
		return 1
	}
	fmt.Printf("this suite runs nothing: %v\n", err)
	flag.Parse()
	// A pattern that matches nothing; -bench is only narrowed when given,
	// since an empty one is what lets go test say "[no tests to run]".
	for _, f := range []string{"test.run", "test.bench"} {
		if g := flag.Lookup(f); g == nil || (f == "test.bench" && g.Value.String() == "") {
			continue
		}
		if err := flag.Set(f, "^$"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}
