package createapp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bundleHasPlugin checks that the app's JavaScript (not its source maps)
// holds the breakglass frontend plugin and its sign-in API.
func bundleHasPlugin(t *testing.T, static string) {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(static, "*.js"))
	if err != nil || len(found) == 0 {
		t.Fatalf("the app's bundle has no JavaScript in %s (%v)", static, err)
	}
	want := []string{`pluginId:"breakglass"`, `"plugin.breakglass.auth"`, `"plugin.breakglass.client"`}
	have := map[string]string{}
	for _, f := range found {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if strings.Contains(string(b), w) {
				have[w] = filepath.Base(f)
			}
		}
	}
	for _, w := range want {
		if have[w] == "" {
			t.Errorf("the app's bundle (%d files) has no %s: the breakglass plugin is not in the app", len(found), w)
		}
	}
	t.Logf("the app's bundle holds the breakglass plugin: %v", have)
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// backendStartsPlugin starts the app's backend (yarn start, on a free
// port, its SQLite in memory) and checks that it initializes the
// breakglass plugin, then, if the whole backend came up, that the
// plugin's routes are mounted (an unauthenticated request is refused, not
// unknown).
func backendStartsPlugin(t *testing.T, r *run, app string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	local := filepath.Join(app, "app-config.test.yaml")
	conf := fmt.Sprintf("app:\n  baseUrl: %s\nbackend:\n  baseUrl: %s\n  listen:\n    host: 127.0.0.1\n    port: %d\n", base, base, port)
	if err := os.WriteFile(local, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(r.logs, "backend.log")
	logW, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer logW.Close()
	cmd := exec.Command("nice", "-n", "10", "yarn", "start", "--config", "../../app-config.yaml", "--config", local)
	cmd.Dir, cmd.Env = filepath.Join(app, "packages", "backend"), r.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = io.MultiWriter(pw, logW), io.MultiWriter(pw, logW)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(exited)
	}()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	t.Cleanup(stop)

	var started, initialized, complete bool
	var failures []string
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- ansi.ReplaceAllString(sc.Text(), "")
		}
		close(lines)
	}()
	timeout := time.After(5 * time.Minute)
	var after <-chan time.Time // a few seconds past "complete", for the failures logged then
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break wait
			}
			if strings.Contains(line, "Plugin initialization started:") && strings.Contains(line, "'breakglass'") {
				started = true
			}
			if newly, _, _ := strings.Cut(line, "still initializing"); strings.Contains(newly, "newly initialized:") && strings.Contains(newly, "'breakglass'") {
				initialized = true
			}
			if strings.Contains(line, "threw an error during startup") || strings.Contains(line, "startup failed") {
				failures = append(failures, line)
			}
			if strings.Contains(line, "Plugin initialization complete") && after == nil {
				complete, after = true, time.After(5*time.Second)
			}
		case <-after:
			break wait
		case <-timeout:
			break wait
		}
	}
	// Drain, so the backend never blocks on its output.
	go func() {
		for range lines {
		}
	}()
	r.times = append(r.times, fmt.Sprintf("%-22s %8s  %s", "backend start", time.Since(start).Round(time.Second), "yarn start (until plugins initialized)"))
	out, _ := os.ReadFile(logFile)
	log := ansi.ReplaceAllString(string(out), "")
	if !started {
		t.Fatalf("the backend did not start initializing the breakglass plugin (backend.add(import('@tower-dev/backstage-plugin-breakglass-backend')) not resolved?):\n%s", tail(log, 60))
	}
	if !initialized {
		t.Fatalf("the backend did not initialize the breakglass plugin:\n%s", tail(log, 60))
	}
	if !complete && len(failures) == 0 {
		t.Fatalf("the backend did not finish initializing its plugins in 5 minutes:\n%s", tail(log, 60))
	}
	var ours []string
	for _, f := range failures {
		if strings.Contains(f, "breakglass") {
			ours = append(ours, f)
		}
	}
	if len(ours) > 0 {
		t.Fatalf("the breakglass plugin failed the backend's startup:\n%s", strings.Join(ours, "\n"))
	}
	t.Logf("the backend initialized the breakglass plugin (%s)", time.Since(start).Round(time.Second))
	if len(failures) > 0 {
		// Another plugin of create-app's backend failed; the breakglass
		// plugin was initialized all the same.
		msg := fmt.Sprintf("the backend's startup failed, not for the breakglass plugin:\n%s", strings.Join(failures, "\n"))
		if os.Getenv(unpinnedEnv) == "1" {
			t.Log(msg)
		} else {
			t.Error(msg)
		}
		return
	}
	// Mounted: refused without credentials, where an unknown plugin's path
	// is not found.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status := func(p string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+p, http.NoBody)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	unknown, mounted := status("/api/no-such-plugin/sessions"), status("/api/breakglass/sessions")
	if unknown != http.StatusNotFound || mounted != http.StatusUnauthorized {
		t.Errorf("GET /api/breakglass/sessions without credentials: %d, want 401 (an unknown plugin's path: %d, want 404)", mounted, unknown)
	} else {
		t.Logf("the backend serves /api/breakglass (401 without credentials; an unknown plugin's path 404)")
	}
}
