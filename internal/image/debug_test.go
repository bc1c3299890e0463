package image

import (
	"archive/tar"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestDebugImage: the debug image built from the machine's static busybox
// (make test installs busybox-static), pushed and pulled back by digest:
// it runs as 65532 with a shell, every tool is a hard link to the one
// busybox (so a held copy's hold volume finds /bin/sleep inside the
// volume), nothing is writable, the same busybox gives the same digest,
// and the tools taken out of the image run.
func TestDebugImage(t *testing.T) {
	const busybox = "/bin/busybox"
	if _, err := os.Stat(busybox); err != nil {
		t.Fatalf("no static busybox at %s: make test installs busybox-static (hack/debian-packages.sh)", busybox)
	}
	epoch := time.Unix(0, 0).UTC()
	img, err := BuildDebug(busybox, runtime.GOARCH, epoch)
	if err != nil {
		t.Fatal(err)
	}
	again, err := BuildDebug(busybox, runtime.GOARCH, epoch)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	if d2, _ := again.Digest(); d1 != d2 {
		t.Fatalf("two builds of the same busybox: %s and %s", d1, d2)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	tag, err := name.ParseReference(strings.TrimPrefix(reg.URL, "http://") + "/tower-dev/breakglass-debug:test")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(tag.Context().Digest(d1.String()))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != User || !slices.Equal(cfg.Config.Entrypoint, []string{"/bin/sh"}) {
		t.Fatalf("the debug image's config: %+v", cfg.Config)
	}
	dir := t.TempDir()
	links := map[string]string{}
	files := mutate.Extract(pulled)
	defer files.Close()
	tr := tar.NewReader(files)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeDir && h.Mode&0o222 != 0 {
			t.Errorf("%s is writable in the image: %o", h.Name, h.Mode)
		}
		switch h.Typeflag {
		case tar.TypeLink:
			links[h.Name] = h.Linkname
		case tar.TypeSymlink:
			t.Errorf("%s is a symlink: in a hold volume it would resolve in the app's root", h.Name)
		case tar.TypeReg:
			f, err := os.OpenFile(filepath.Join(dir, filepath.Base(h.Name)), os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
		}
	}
	for _, tool := range DebugTools {
		if links["bin/"+tool] != "bin/busybox" {
			t.Errorf("/bin/%s is not a hard link to /bin/busybox: %q", tool, links["bin/"+tool])
		}
	}
	// The tools as a debug session runs them: by name, through the one binary.
	bb := filepath.Join(dir, "busybox")
	for _, argv := range [][]string{{"sleep", "0"}, {"ls", "/"}, {"cat", "/proc/self/status"}, {"ps"}, {"nslookup", "--help"}} {
		out, err := exec.Command(bb, argv...).CombinedOutput()
		usage := argv[0] == "nslookup" && strings.Contains(string(out), "Usage: nslookup") // --help exits 1
		if err != nil && !usage {
			t.Errorf("%v from the image: %v\n%s", argv, err, out)
		}
	}
}
