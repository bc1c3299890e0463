package image

import (
	"archive/tar"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestBuildPushRun: the server built, packed into the image, pushed
// to a registry and pulled back; the binary taken out of the pulled image
// runs; the image runs as 65532 and builds reproducibly.
func TestBuildPushRun(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "breakglass")
	// Built as make build does, so the build cache serves it; make image
	// builds it static (CGO_ENABLED=0), which costs minutes from a cold cache.
	build := exec.Command("go", "build", "-o", bin, "github.com/tower-dev/breakglass/cmd/breakglass")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the server: %v\n%s", err, out)
	}
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	epoch := time.Unix(0, 0).UTC()
	img, err := Build(bin, ca, runtime.GOARCH, epoch)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Build(bin, ca, runtime.GOARCH, epoch)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Fatalf("two builds of the same inputs: %s and %s", d1, d2)
	}

	reg := httptest.NewServer(registry.New())
	defer reg.Close()
	ref, err := name.ParseReference(strings.TrimPrefix(reg.URL, "http://") + "/tower-dev/breakglass:test")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := pulled.Digest(); d != d1 {
		t.Fatalf("pulled %s, pushed %s", d, d1)
	}
	cfg, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != User || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/breakglass" || cfg.OS != "linux" {
		t.Fatalf("the image's config: %+v", cfg.Config)
	}
	files := mutate.Extract(pulled)
	defer files.Close()
	tr := tar.NewReader(files)
	var found bool
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "breakglass" {
			continue
		}
		found = true
		if h.Mode&0o222 != 0 {
			t.Fatalf("the binary is writable in the image: %o", h.Mode)
		}
		out := filepath.Join(dir, "from-image")
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		help, err := exec.Command(out, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(help), "relay") || !strings.Contains(string(help), "sweeper") || !strings.Contains(string(help), "webhook") {
			t.Fatalf("the binary from the image: %v\n%s", err, help)
		}
	}
	if !found {
		t.Fatal("no /breakglass in the image")
	}
}
