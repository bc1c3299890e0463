// Package createapp_test follows docs/backstage.md's Install section in an
// empty app made by Backstage's own @backstage/create-app, with Tower's
// packages packed as they would be published, and checks that the app type
// checks and builds and that its backend starts the breakglass plugin.
//
// It is a release check (minutes, a fresh install from the npm registry):
// make test-release runs it with BREAKGLASS_RELEASE=1; otherwise it skips.
package createapp_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

const (
	// createAppVersion is the create-app whose template is Backstage
	// 1.55.0: @backstage/cli 0.36.6, frontend-plugin-api 0.18.1,
	// backend-defaults 0.18.0, the versions backstage/package-lock.json
	// builds Tower's plugins against.
	createAppVersion = "0.9.2"
	// yarnLauncherVersion is the yarn command create-app looks for; in the
	// app it runs the app's own Yarn 4 (.yarnrc.yml's yarnPath, which
	// create-app's template ships), so nothing comes from outside the npm
	// registry.
	yarnLauncherVersion = "1.22.22"
	// releaseEnv, set to 1, runs this check.
	releaseEnv = "BREAKGLASS_RELEASE"
	// unpinnedEnv, set to 1, installs the app as create-app leaves it
	// today, each @backstage package at the newest its caret range allows,
	// instead of at create-app's own versions.
	unpinnedEnv = "BREAKGLASS_CREATEAPP_UNPINNED"
	// cacheEnv names a folder kept between runs for Yarn's and npm's
	// caches (otherwise they are in the test's temporary folder).
	cacheEnv = "BREAKGLASS_CREATEAPP_CACHE"
)

// The workspace's packages, as the doc names them, by folder.
var packages = []struct{ name, dir string }{
	{"@tower-dev/backstage-plugin-breakglass", "plugins/breakglass"},
	{"@tower-dev/backstage-plugin-breakglass-backend", "plugins/breakglass-backend"},
	{"@tower-dev/backstage-plugin-breakglass-common", "plugins/breakglass-common"},
	{"@tower-dev/breakglass-portal", "packages/portal"},
	{"@tower-dev/breakglass-terminal", "packages/terminal"},
}

// root is the repository's root, from this file's place in it.
var root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}()

// run is one test's commands: each niced, in env, its output in a log
// file, and how long each took.
type run struct {
	t     *testing.T
	env   []string
	logs  string
	n     int
	times []string
}

// do runs args in dir and fails the test, with the end of its output, if
// it fails.
func (r *run) do(step, dir string, args ...string) string {
	r.t.Helper()
	out, err := r.try(step, dir, args...)
	if err != nil {
		r.t.Fatalf("%s: %s: %v\n%s", step, strings.Join(args, " "), err, tail(out, 80))
	}
	return out
}

// try runs args in dir and returns its output and error.
func (r *run) try(step, dir string, args ...string) (string, error) {
	r.t.Helper()
	r.n++
	log := filepath.Join(r.logs, fmt.Sprintf("%02d-%s.log", r.n, unsafeName.ReplaceAllString(step, "-")))
	f, err := os.Create(log)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("nice", append([]string{"-n", "10"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, r.env, f, f
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start).Round(time.Second)
	r.times = append(r.times, fmt.Sprintf("%-22s %8s  %s", step, took, strings.Join(args, " ")))
	r.t.Logf("%s: %s (%s)", step, strings.Join(args, " "), took)
	out, _ := os.ReadFile(log)
	return string(out), err
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func TestInstallSectionInACreateAppApp(t *testing.T) {
	if os.Getenv(releaseEnv) != "1" {
		t.Skipf("a release check (minutes; installs a new Backstage app from the npm registry): make test-release runs it (%s=1)", releaseEnv)
	}
	node22 := filepath.Join(root, "bin", "node22", "bin")
	need(t, node22)

	work := t.TempDir()
	cache := os.Getenv(cacheEnv)
	if cache == "" {
		cache = filepath.Join(work, "cache")
	}
	r := &run{t: t, logs: filepath.Join(work, "logs")}
	for _, d := range []string{r.logs, filepath.Join(work, "tmp"), cache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.env = environment(map[string]string{
		"PATH": filepath.Join(work, "tools", "node_modules", ".bin") + ":" + node22 + ":" + os.Getenv("PATH"),
		// Everything the installs write stays in the test's folder.
		"TMPDIR":             filepath.Join(work, "tmp"),
		"npm_config_cache":   filepath.Join(cache, "npm"),
		"YARN_GLOBAL_FOLDER": filepath.Join(cache, "yarn"),
		// A new app has no lockfile to keep as it is, CI or not.
		"YARN_ENABLE_IMMUTABLE_INSTALLS": "false",
		"YARN_ENABLE_TELEMETRY":          "0",
		"YARN_ENABLE_PROGRESS_BARS":      "false",
		// The backend's better-sqlite3 is built from source for Node.js
		// 22 with its own headers (no prebuilt binary can be downloaded).
		"npm_config_nodedir":           filepath.Join(root, "bin", "node22"),
		"npm_config_build_from_source": "true",
		"BACKSTAGE_APP_NAME":           "app",
		"GIT_AUTHOR_NAME":              "createapp test", "GIT_AUTHOR_EMAIL": "createapp@example.com",
		"GIT_COMMITTER_NAME": "createapp test", "GIT_COMMITTER_EMAIL": "createapp@example.com",
	})
	started := time.Now()
	defer func() {
		var du []byte
		for _, d := range []string{work, filepath.Join(work, "app"), filepath.Join(work, "app", "node_modules"), cache} {
			b, _ := exec.Command("du", "-sh", d).Output()
			du = append(du, b...)
		}
		t.Logf("steps:\n%s\ntotal %s\ndisk used (the cache is in the first unless %s is set):\n%s",
			strings.Join(r.times, "\n"), time.Since(started).Round(time.Second), cacheEnv, du)
	}()

	// The packages as npm pack makes them, as they would be published.
	tarballs := pack(t, r, work)

	// create-app, pinned, and the yarn command it needs.
	r.do("tools", work, "npm", "install", "--prefix", filepath.Join(work, "tools"), "--no-audit", "--no-fund",
		"@backstage/create-app@"+createAppVersion, "yarn@"+yarnLauncherVersion)
	r.do("create-app", work, "backstage-create-app", "--path", "app", "--skip-install")
	app := filepath.Join(work, "app")
	if os.Getenv(unpinnedEnv) != "1" {
		pinBackstage(t, r, work, app)
	}
	// What create-app runs itself when not told --skip-install.
	install := r.do("yarn install", app, "yarn", "install")
	if _, err := os.Stat(filepath.Join(app, "node_modules", "better-sqlite3", "build", "Release", "better_sqlite3.node")); err != nil {
		var builds []string
		for _, line := range strings.Split(install, "\n") {
			if strings.Contains(line, "YN0009") {
				builds = append(builds, line)
			}
		}
		t.Fatalf("the backend's better-sqlite3 was not built (%v); yarn install's failed builds:\n%s", err, strings.Join(builds, "\n"))
	}
	r.do("yarn tsc (empty app)", app, "yarn", "tsc")
	t.Logf("the app's Backstage: %s", installedVersions(t, app))

	// The Install section, step by step.
	follow(t, r, app, tarballs)

	tsc, err := r.try("yarn tsc", app, "yarn", "tsc")
	if err != nil {
		t.Fatalf("the app with Tower's plugins added as the doc says does not type-check: %v\n%s", err, tail(tsc, 80))
	}
	build, err := r.try("yarn build:all", app, "yarn", "build:all")
	if err != nil {
		t.Fatalf("the app with Tower's plugins does not build: %v\n%s", err, tail(build, 80))
	}
	bundleHasPlugin(t, filepath.Join(app, "packages", "app", "dist", "static"))
	backendStartsPlugin(t, r, app)
}

// need fails the test, naming the make target, when a program or file the
// check uses is missing.
func need(t *testing.T, node22 string) {
	t.Helper()
	var missing []string
	if _, err := os.Stat(filepath.Join(node22, "node")); err != nil {
		missing = append(missing, filepath.Join(node22, "node")+" (make backstage)")
	}
	for _, p := range packages {
		if _, err := os.Stat(filepath.Join(root, "backstage", p.dir, "package.json")); err != nil {
			missing = append(missing, p.name+"'s package.json")
		}
	}
	for _, f := range []string{"plugins/breakglass/dist/index.esm.js", "plugins/breakglass-backend/dist/index.cjs.js",
		"plugins/breakglass-common/dist/index.cjs.js", "packages/portal/dist/index.cjs.js"} {
		if _, err := os.Stat(filepath.Join(root, "backstage", f)); err != nil {
			missing = append(missing, "backstage/"+f+" (make backstage)")
		}
	}
	// npm (Debian's, run by Node.js 22 first on PATH); nice, du and cp; a
	// C++ toolchain and Python for node-gyp (better-sqlite3).
	for _, c := range []string{"npm", "nice", "du", "make", "g++", "python3"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c+" (Debian's packages)")
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s=1, but missing: %s", releaseEnv, strings.Join(missing, ", "))
	}
}

// environment is this process's environment with vars set, less any npm,
// Yarn or Node setting of the caller's that would change the installs.
func environment(vars map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := vars[k]; ok || strings.HasPrefix(strings.ToLower(k), "npm_") || strings.HasPrefix(k, "YARN_") || k == "NODE_OPTIONS" {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}
