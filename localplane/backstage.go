package localplane

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tower-dev/breakglass/localplane/tools"

	"github.com/tower-dev/breakglass/internal/oidcissuer"
	"github.com/tower-dev/breakglass/localplane/postgres"
)

// backstageAudience is Backstage's OIDC client at the local issuer: the ID
// tokens it gets for people are the ones its backend forwards to the relay.
const backstageAudience = "backstage"

// BackstageDir is the Backstage workspace (make backstage installs it).
func BackstageDir() string {
	return filepath.Join(tools.Root, "backstage")
}

// randomSecret signs Backstage's session cookies for one run.
func randomSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// BackstageAvailable says why Backstage cannot run here, or nil.
func BackstageAvailable() error {
	if _, err := os.Stat(filepath.Join(BackstageDir(), "node_modules", ".package-lock.json")); err != nil {
		return errors.New("the Backstage workspace is not installed: run make backstage")
	}
	if _, err := os.Stat(backstageNode()); err != nil {
		return errors.New("no Node.js 22 in bin/node22: run make backstage")
	}
	return postgres.Available()
}

// backstageNode is the Node.js Backstage runs on (22: Debian's 20 is older
// than Backstage supports); make backstage unpacks it from the npm registry.
func backstageNode() string { return filepath.Join(tools.BinDir(), "node22", "bin", "node") }

// startBackstage runs Backstage's backend on PostgreSQL at ln's address, signing
// people in at the issuer and forwarding break-glass calls to the relay,
// its Kubernetes plugin reading every plane's pods. Once it reports ready,
// it answers the file its log goes to: its access log alone is thousands of
// lines, which would bury the plane's own.
func startBackstage(ctx context.Context, dir string, ln net.Listener, issuer *oidcissuer.Issuer, relayURL string, planes []*plane, allowAll bool, stops *[]func() error) (logFile string, err error) {
	if err := BackstageAvailable(); err != nil {
		return "", err
	}
	kubernetes, err := kubernetesConfig(ctx, planes)
	if err != nil {
		return "", fmt.Errorf("the Kubernetes plugin's account: %w", err)
	}
	bsDir := filepath.Join(dir, "backstage")
	if err = os.MkdirAll(bsDir, 0o755); err != nil {
		return "", err
	}
	logFile = filepath.Join(bsDir, "backstage.log")
	logs, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", err
	}
	*stops = append(*stops, logs.Close)
	// A folder of its own: PostgreSQL runs as its own user, who cannot
	// enter the plane's (the person's only).
	pgDir, err := os.MkdirTemp("", "breakglass-backstage-db-")
	if err != nil {
		return "", err
	}
	*stops = append(*stops, func() error { return os.RemoveAll(pgDir) })
	pg, err := postgres.Start(pgDir)
	if err != nil {
		return "", err
	}
	*stops = append(*stops, pg.Stop)
	url := "http://" + ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	issuer.AddClient(backstageAudience, url+"/api/auth/oidc/handler/frame")
	devPolicy := "breakglass"
	if allowAll {
		devPolicy = "allow-all"
	}
	// Everything that moves with a run; app-config.yaml has the rest.
	local := fmt.Sprintf(`app:
  baseUrl: %[1]s
backend:
  baseUrl: %[1]s
  listen: { host: 127.0.0.1, port: %[2]d }
  cors: { origin: %[1]s }
  database:
    connection: { host: 127.0.0.1, port: %[3]d, user: postgres, password: none }
auth:
  session: { secret: %[4]q }
  providers:
    oidc:
      development:
        metadataUrl: %[5]s/.well-known/openid-configuration
breakglass:
  relayURL: %[6]s
  devPolicy: %[7]s
%[8]s`, url, port, pg.Port, randomSecret(), issuer.URL, relayURL, devPolicy, kubernetes)
	localConfig := filepath.Join(bsDir, "app-config.local.yaml")
	if err := os.WriteFile(localConfig, []byte(local), 0o600); err != nil {
		return "", err
	}
	backend := filepath.Join(BackstageDir(), "packages", "backend")
	// Not bound to ctx: the stop below ends it, after ctx has ended.
	cmd := exec.Command(backstageNode(), "--enable-source-maps", "--require", "@backstage/cli-node/config/nodeTransform.cjs", "src/index.ts",
		"--config", "../../app-config.yaml", "--config", localConfig)
	cmd.Dir = backend
	cmd.Env = append(os.Environ(), "NODE_ENV=development", "PATH="+filepath.Dir(backstageNode())+":"+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Let go of the address just before Backstage takes it.
	_ = ln.Close()
	if err := cmd.Start(); err != nil {
		return "", err
	}
	// exited closes when the backend has; waitErr says how.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	*stops = append(*stops, func() error {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		return stoppedBySignal(waitErr)
	})
	// Ready once its plugins have started and the catalog holds the demo
	// people; a backend that exits is an error at once. The caller's
	// progress check catches one that hangs.
	for {
		select {
		case <-exited:
			return "", fmt.Errorf("the Backstage backend exited (its log: %s): %w", logFile, waitErr)
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		resp, err := http.Get(url + "/.backstage/health/v1/readiness")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return logFile, nil
			}
		}
	}
}

// stoppedBySignal is nil for a backend that ended because it was told to.
func stoppedBySignal(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) && !exit.Exited() {
		return nil
	}
	return err
}
