package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// DebugTools are the commands the debug image carries, each a hard link to
// one static busybox: what an on-call person reaches for in a pod (its
// processes, files, network and name service), and sleep, which also holds
// a held copy's app containers from the image volume (a hard link, not a
// symlink: a symlink would resolve in the app's root, not the volume's).
var DebugTools = []string{
	"sh", "sleep", "ps", "top", "ls", "cat", "head", "tail", "less", "grep", "find", "stat", "df", "du", "free",
	"id", "env", "hostname", "uname", "date", "nslookup", "wget", "nc", "netstat", "ip", "ping", "traceroute",
	"tr", "wc", "sort", "uniq", "cut", "xargs", "vi",
}

// BuildDebug makes the debug image from a static busybox: /bin/busybox and
// a hard link per tool in /bin, on an empty base, run as user 65532 with a
// shell. Nothing in it writes to its root (the debug container's root is
// read-only); the file times are fixed, so the same busybox gives the same
// digest.
func BuildDebug(busybox string, created time.Time) (v1.Image, error) {
	bin, err := os.ReadFile(busybox)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "bin/", Mode: 0o755, ModTime: created, Typeflag: tar.TypeDir}); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o555, Size: int64(len(bin)), ModTime: created, Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	for _, tool := range DebugTools {
		if err := tw.WriteHeader(&tar.Header{Name: "bin/" + tool, Linkname: "bin/busybox", Mode: 0o555, ModTime: created, Typeflag: tar.TypeLink}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = "amd64", "linux", v1.Time{Time: created}
	cfg.Config.Entrypoint = []string{"/bin/sh"}
	cfg.Config.User = User
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/bin", "PS1=debug$ "}
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.source": "https://github.com/tower-dev/breakglass",
		"org.opencontainers.image.description": "breakglass debug tools: a static busybox, non-root"}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("the debug image's config: %w", err)
	}
	return img, nil
}
