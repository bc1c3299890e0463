// Command build writes the server image and the debug image (`make image`),
// each one OCI index of a linux/amd64 and a linux/arm64 image with a
// CycloneDX SBOM attached (an artifact whose subject is the index), into
// an OCI image layout; with -push, to a registry as well (make test builds
// the server's for this machine's architecture alone). No Docker engine
// is needed: the images are a static binary (or a static busybox) on an
// empty base.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/tower-dev/breakglass/internal/image"
)

// perArch is a repeated ARCH=VALUE flag.
type perArch map[string]string

func (p perArch) String() string { return fmt.Sprint(map[string]string(p)) }

func (p perArch) Set(v string) error {
	arch, val, ok := strings.Cut(v, "=")
	if !ok || arch == "" || val == "" {
		return fmt.Errorf("%q: want ARCH=VALUE", v)
	}
	p[arch] = val
	return nil
}

func main() {
	servers, busyboxes, busyboxVersions := perArch{}, perArch{}, perArch{}
	flag.Var(servers, "server", "ARCH=PATH: the static breakglass binary for linux/ARCH (repeated, one per architecture)")
	flag.Var(busyboxes, "busybox", "ARCH=PATH: the static busybox for linux/ARCH (repeated)")
	flag.Var(busyboxVersions, "busybox-version", "ARCH=VERSION: the Debian busybox-static package each busybox came from (repeated)")
	ca := flag.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle the server image ships")
	version := flag.String("version", "dev", "the images' version, in their SBOMs and the layout's names")
	out := flag.String("o", "bin/images", "the OCI image layout to write")
	push := flag.String("push", "", "also push both indexes and their SBOMs under this repository prefix (e.g. ghcr.io/tower-dev)")
	serverArches := flag.String("server-arches", strings.Join(image.Arches, ","),
		"the architectures the server image is built for: all of them unless a test asks for fewer (make test: this machine's)")
	flag.Parse()
	if err := run(strings.Split(*serverArches, ","), servers, busyboxes, busyboxVersions, *ca, *version, *out, *push); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// built is an index and the SBOM attached to it, under its name.
type built struct {
	name  string
	index v1.ImageIndex
	sbom  v1.Image
}

// run builds the debug image for every architecture, and the server image
// for serverArches: a test may ask for this machine's alone, since each
// other one is the whole server cross-compiled (the debug image's are
// Debian's busybox, and the webhook's tests need its arm64 image).
func run(serverArches []string, servers, busyboxes, busyboxVersions perArch, ca, version, out, push string) error {
	for _, arch := range serverArches {
		if !slices.Contains(image.Arches, arch) {
			return fmt.Errorf("-server-arches: %q is not one of %v", arch, image.Arches)
		}
	}
	if push != "" && len(serverArches) != len(image.Arches) {
		return fmt.Errorf("-push: a release pushes the server image for each of %v, not only %v", image.Arches, serverArches)
	}
	for _, want := range []struct {
		flag   string
		got    perArch
		arches []string
	}{{"-server", servers, serverArches}, {"-busybox", busyboxes, image.Arches}, {"-busybox-version", busyboxVersions, image.Arches}} {
		for _, arch := range want.arches {
			if want.got[arch] == "" {
				return fmt.Errorf("%s %s=...: required, one for each of %v", want.flag, arch, want.arches)
			}
		}
	}
	epoch := time.Unix(0, 0).UTC()
	var serverImages, debugImages []v1.Image
	var binaries []string
	var debs []cdx.Component
	for _, arch := range image.Arches {
		if slices.Contains(serverArches, arch) {
			img, err := image.Build(servers[arch], ca, arch, epoch)
			if err != nil {
				return fmt.Errorf("the server image for %s: %w", arch, err)
			}
			serverImages, binaries = append(serverImages, img), append(binaries, servers[arch])
		}
		dbg, err := image.BuildDebug(busyboxes[arch], arch, epoch)
		if err != nil {
			return fmt.Errorf("the debug image for %s: %w", arch, err)
		}
		debugImages = append(debugImages, dbg)
		debs = append(debs, image.DebianComponent("busybox-static", busyboxVersions[arch], arch))
	}
	goModules, err := image.GoComponents(binaries...)
	if err != nil {
		return err
	}
	var all []built
	for _, b := range []struct {
		name       string
		images     []v1.Image
		components []cdx.Component
	}{{"breakglass", serverImages, goModules}, {"breakglass-debug", debugImages, debs}} {
		idx, err := image.Index(b.images...)
		if err != nil {
			return err
		}
		doc, err := image.SBOM(b.name, version, epoch, b.components)
		if err != nil {
			return err
		}
		sbom, err := image.Attachment(doc, idx)
		if err != nil {
			return err
		}
		all = append(all, built{b.name, idx, sbom})
	}
	if err := writeLayout(out, version, all); err != nil {
		return err
	}
	if push != "" {
		return pushAll(push, version, all)
	}
	return nil
}

// writeLayout writes a fresh layout holding each index and its SBOM,
// named as image.FromLayout finds them.
func writeLayout(dir, version string, all []built) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, b := range all {
		ref := b.name + ":" + version
		if err := p.AppendIndex(b.index, layout.WithAnnotations(map[string]string{image.RefNameAnnotation: ref})); err != nil {
			return err
		}
		if err := p.AppendImage(b.sbom, layout.WithAnnotations(map[string]string{image.RefNameAnnotation: ref + ".sbom"})); err != nil {
			return err
		}
		report(dir, ref, b)
	}
	return nil
}

// pushAll pushes each index under prefix/name:version and its SBOM by
// digest, which a registry with the referrers API lists under the index.
func pushAll(prefix, version string, all []built) error {
	for _, b := range all {
		ref, err := name.ParseReference(prefix + "/" + b.name + ":" + version)
		if err != nil {
			return err
		}
		if err := remote.WriteIndex(ref, b.index); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		d, err := b.sbom.Digest()
		if err != nil {
			return err
		}
		if err := remote.Write(ref.Context().Digest(d.String()), b.sbom); err != nil {
			return fmt.Errorf("pushing the SBOM of %s: %w", ref, err)
		}
		report(ref.Context().String(), ref.Identifier(), b)
	}
	return nil
}

func report(where, ref string, b built) {
	d, _ := b.index.Digest()
	s, _ := b.sbom.Digest()
	m, _ := b.index.IndexManifest()
	var platforms []string
	for _, desc := range m.Manifests {
		platforms = append(platforms, desc.Platform.String())
	}
	sort.Strings(platforms)
	fmt.Printf("%s %s index %s (%s), SBOM %s\n", where, ref, d, strings.Join(platforms, ", "), s)
}
