package main

import (
	"os"
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/internal/image"
)

// TestRunWritesLayout: the layout holds the server's and the debug
// image's indexes under their names, each with one image per
// architecture, and each index's SBOM, whose subject it is.
func TestRunWritesLayout(t *testing.T) {
	self, err := os.Executable() // a Go binary with build information
	if err != nil {
		t.Fatal(err)
	}
	busybox := "/bin/busybox"
	if _, err := os.Stat(busybox); err != nil {
		t.Fatalf("no static busybox at %s: make test installs busybox-static (hack/debian-packages.sh)", busybox)
	}
	out := t.TempDir() + "/images"
	both := func(v string) perArch { return perArch{"amd64": v, "arm64": v} }
	if err := run(image.Arches, both(self), both(busybox), both("1:1.35.0-4"), "/etc/ssl/certs/ca-certificates.crt", "v1.2.3", out, ""); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"breakglass", "breakglass-debug"} {
		idx, sbom, err := image.FromLayout(out, name)
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil || len(im.Manifests) != 2 {
			t.Fatalf("%s: %v manifests, %v", name, im, err)
		}
		am, err := sbom.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if am.Subject == nil || am.Subject.Digest != d {
			t.Errorf("%s: the SBOM's subject is %v, want the index %s", name, am.Subject, d)
		}
	}
	if _, _, err := image.FromLayout(out, "breakglass-other"); err == nil || !strings.Contains(err.Error(), "make image writes them") {
		t.Errorf("a name the layout lacks: %v", err)
	}
}

func TestRunNamesWhatIsMissing(t *testing.T) {
	err := run(image.Arches, perArch{"amd64": "x"}, perArch{}, perArch{}, "", "dev", t.TempDir(), "")
	if err == nil || !strings.Contains(err.Error(), "-server arm64=...: required") {
		t.Fatalf("%v, want the missing flag named", err)
	}
	if err := (perArch{}).Set("amd64"); err == nil || !strings.Contains(err.Error(), "ARCH=VALUE") {
		t.Fatalf("a flag without its value: %v", err)
	}
}

// TestRunServerForOneArch: asked for this machine's server image alone,
// the server's index holds that one and the debug image's every
// architecture still; a release's push, or an architecture the images are
// not built for, is refused.
func TestRunServerForOneArch(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	busybox := "/bin/busybox"
	if _, err := os.Stat(busybox); err != nil {
		t.Fatalf("no static busybox at %s: make test installs busybox-static (hack/debian-packages.sh)", busybox)
	}
	both := func(v string) perArch { return perArch{"amd64": v, "arm64": v} }
	out := t.TempDir() + "/images"
	if err := run([]string{"amd64"}, perArch{"amd64": self}, both(busybox), both("1:1.35.0-4"), "/etc/ssl/certs/ca-certificates.crt", "dev", out, ""); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"breakglass": 1, "breakglass-debug": len(image.Arches)} {
		idx, _, err := image.FromLayout(out, name)
		if err != nil {
			t.Fatal(err)
		}
		if im, err := idx.IndexManifest(); err != nil || len(im.Manifests) != want {
			t.Errorf("%s: %v, %v; want %d images", name, im, err, want)
		}
	}
	err = run([]string{"amd64"}, perArch{"amd64": self}, both(busybox), both("1:1.35.0-4"), "", "dev", t.TempDir(), "registry.example/tower")
	if err == nil || !strings.Contains(err.Error(), "a release pushes the server image for each of") {
		t.Errorf("a push of one architecture: %v", err)
	}
	err = run([]string{"riscv64"}, perArch{"riscv64": self}, both(busybox), both("1:1.35.0-4"), "", "dev", t.TempDir(), "")
	if err == nil || !strings.Contains(err.Error(), `"riscv64" is not one of`) {
		t.Errorf("an architecture the images are not built for: %v", err)
	}
}
