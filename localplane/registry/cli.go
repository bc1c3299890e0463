package registry

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
)

// CLI is the stock cosign CLI (bin/cosign, built from cosign's module) with
// a key pair it made itself, signing as a team does at the command line. It
// runs offline: an empty trusted root and a signing config with no log
// stop it from reaching for the public-good instance.
type CLI struct {
	Bin string
	// Dir holds cosign.key (encrypted with Password), cosign.pub and the
	// CLI's home.
	Dir string
}

// cliPassword encrypts the test's key: it protects nothing.
const cliPassword = "breakglass-test"

// NewCLI makes a key pair with `cosign generate-key-pair` in dir.
func NewCLI(ctx context.Context, bin, dir string) (*CLI, error) {
	c := &CLI{Bin: bin, Dir: dir}
	files := map[string]string{
		"trusted-root.json":   `{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`,
		"signing-config.json": `{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json","rekorTlogConfig":{"selector":"ANY"},"tsaConfig":{"selector":"ANY"}}`,
	}
	for file, content := range files {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	return c, c.run(ctx, "generate-key-pair")
}

// PublicKey is the key's PEM file.
func (c *CLI) PublicKey() string { return filepath.Join(c.Dir, "cosign.pub") }

// Sign runs `cosign sign --key`: in the Sigstore bundle format (cosign
// v3's default) or, with legacy, the older .sig tag.
func (c *CLI) Sign(ctx context.Context, ref name.Digest, legacy bool) error {
	args := []string{"sign", "--key", "cosign.key", "--trusted-root", "trusted-root.json", "--allow-http-registry", "--yes"}
	if legacy {
		args = append(args, "--new-bundle-format=false", "--use-signing-config=false", "--tlog-upload=false")
	} else {
		args = append(args, "--signing-config", "signing-config.json")
	}
	return c.run(ctx, append(args, ref.String())...)
}

// Verify runs `cosign verify --key` on ref, offline: the signature's own
// key, no transparency log.
func (c *CLI) Verify(ctx context.Context, ref name.Digest) error {
	return c.run(ctx, "verify", "--key", "cosign.pub", "--trusted-root", "trusted-root.json", "--insecure-ignore-tlog=true",
		"--allow-http-registry", ref.String())
}

func (c *CLI) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD="+cliPassword, "HOME="+c.Dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cosign %s: %w: %s", args[0], err, out)
	}
	return nil
}
