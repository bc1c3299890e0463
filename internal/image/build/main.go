// Command build writes the server image (`make image`) or the debug image
// (`make debug-image`) as a tarball, for `docker load`, `crane push` or a
// kind cluster's `kind load image-archive`.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/tower-dev/breakglass/internal/image"
)

func main() {
	binary := flag.String("binary", "bin/linux/breakglass", "the static linux/amd64 breakglass binary")
	ca := flag.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to ship")
	ref := flag.String("tag", "ghcr.io/tower-dev/breakglass:dev", "the image's name in the tarball")
	out := flag.String("o", "bin/breakglass-image.tar", "where the tarball goes")
	busybox := flag.String("debug-busybox", "", "build the debug image from this static busybox instead")
	flag.Parse()
	if err := run(*binary, *ca, *ref, *out, *busybox); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(binary, ca, ref, out, busybox string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	epoch := time.Unix(0, 0).UTC()
	img, err := image.Build(binary, ca, epoch)
	if busybox != "" {
		img, err = image.BuildDebug(busybox, epoch)
	}
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s@%s\n", out, tag, digest)
	return nil
}
