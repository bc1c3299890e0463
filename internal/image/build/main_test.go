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
	if err := run(both(self), both(busybox), both("1:1.35.0-4"), "/etc/ssl/certs/ca-certificates.crt", "v1.2.3", out, ""); err != nil {
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
	err := run(perArch{"amd64": "x"}, perArch{}, perArch{}, "", "dev", t.TempDir(), "")
	if err == nil || !strings.Contains(err.Error(), "-server arm64=...: required") {
		t.Fatalf("%v, want the missing flag named", err)
	}
	if err := (perArch{}).Set("amd64"); err == nil || !strings.Contains(err.Error(), "ARCH=VALUE") {
		t.Fatalf("a flag without its value: %v", err)
	}
}
