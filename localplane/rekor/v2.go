package rekor

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/tower-dev/breakglass/localplane/tools"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/tower-dev/breakglass/localplane/cluster"
)

// V2Binary is Rekor v2's server (rekor-tiles on Tessera's POSIX storage),
// built into bin/ by make.
const V2Binary = "rekor-server-v2"

// V2 is a running Rekor v2: one process and a folder, no database.
type V2 struct {
	// URL is its address; Origin names it in its checkpoints, and is the
	// host of the URL a trusted root names it by.
	URL, Origin string
	// PublicKey (PEM) is its key: v2 does not serve it.
	PublicKey []byte
	dir       string
	cmd       *exec.Cmd
}

// StartV2 starts a Rekor v2 with a key made for it.
func StartV2(ctx context.Context) (_ *V2, err error) {
	bin := filepath.Join(tools.BinDir(), V2Binary)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s not in %s: run make %s", V2Binary, tools.BinDir(), filepath.Join("bin", V2Binary))
	}
	l := &V2{Origin: "rekor-v2.breakglass.test"}
	if l.dir, err = os.MkdirTemp("", "breakglass-rekor-v2"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, l.Stop())
		}
	}()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	keyFile := filepath.Join(l.dir, "signer.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if l.PublicKey, err = cryptoutils.MarshalPublicKeyToPEM(key.Public()); err != nil {
		return nil, err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = cluster.FreePort(); err != nil {
			return nil, err
		}
	}
	l.cmd = exec.Command(bin, "serve", "--storage-dir", filepath.Join(l.dir, "log"), "--signer-filepath", keyFile,
		"--hostname", l.Origin, "--http-address", "127.0.0.1", "--http-port", strconv.Itoa(ports[0]),
		"--grpc-address", "127.0.0.1", "--grpc-port", strconv.Itoa(ports[1]), "--http-metrics-port", strconv.Itoa(ports[2]),
		// Entries are sequenced in batches: a short wait keeps tests quick.
		"--batch-max-age", "50ms", "--checkpoint-interval", "100ms")
	logFile, err := os.Create(filepath.Join(l.dir, "rekor-server-v2.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	l.cmd.Stdout, l.cmd.Stderr = logFile, logFile
	if err := l.cmd.Start(); err != nil {
		return nil, err
	}
	l.URL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
	if err := waitHTTP(ctx, l.URL+"/healthz"); err != nil {
		return nil, fmt.Errorf("rekor v2: %w", err)
	}
	return l, nil
}

// Stop kills the server by its PID and removes its folder.
func (l *V2) Stop() error {
	if l.cmd != nil && l.cmd.Process != nil {
		_ = l.cmd.Process.Signal(syscall.SIGKILL)
		_ = l.cmd.Wait()
	}
	return os.RemoveAll(l.dir)
}
