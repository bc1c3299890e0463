package image

import (
	"archive/tar"
	"bytes"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
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

// BuildDebug makes the debug image for linux/arch from a static busybox
// built for it: /bin/busybox and a hard link per tool in /bin, on an empty
// base, run as user 65532 with a shell. Nothing in it writes to its root
// (the debug container's root is read-only); the file times are fixed, so
// the same busybox gives the same digest.
func BuildDebug(busybox, arch string, created time.Time) (v1.Image, error) {
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
	return layerImage(buf.Bytes(), arch, created, func(c *v1.Config) {
		c.Entrypoint = []string{"/bin/sh"}
		c.Env = []string{"PATH=/bin", "PS1=debug$ "}
		c.Labels["org.opencontainers.image.description"] = "breakglass debug tools: a static busybox, non-root"
	})
}
