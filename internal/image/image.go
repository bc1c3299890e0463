// Package image builds the one container image of the three server
// components (breakglass webhook|sweeper|relay) without a Docker engine: the
// static binary and the CA bundle on an empty base, run as user 65532.
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

// User is who the image runs as; the chart says so again in each pod.
const User = "65532:65532"

// Arches are the CPU architectures the images are built for, each a
// linux image of the one index.
var Arches = []string{"amd64", "arm64"}

// Build makes the image for linux/arch from a static binary built for it
// and a CA bundle (for the relay's calls to S3, the OIDC issuer and
// registries). The layer's file times are fixed, so the same inputs give
// the same digest.
func Build(binary, caBundle, arch string, created time.Time) (v1.Image, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(caBundle)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/ssl/certs/ca-certificates.crt", 0o444, ca},
		{"breakglass", 0o555, bin},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: created, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return layerImage(buf.Bytes(), arch, created, func(c *v1.Config) {
		c.Entrypoint = []string{"/breakglass"}
		c.Env = []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	})
}

// layerImage is an image of one layer (a tar) on an empty base, for
// linux/arch, run as User from /, with the project's source label; set
// adds what the image runs and its environment.
func layerImage(layerTar []byte, arch string, created time.Time, set func(*v1.Config)) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
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
	cfg.Architecture, cfg.OS, cfg.Created = arch, "linux", v1.Time{Time: created}
	cfg.Config.User = User
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.source": "https://github.com/tower-dev/breakglass"}
	set(&cfg.Config)
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("the image's config: %w", err)
	}
	return img, nil
}
