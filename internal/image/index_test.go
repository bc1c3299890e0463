package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
)

// crossBuilt builds a small static program for linux/arch: a stand-in for
// the server, so the test needs no cross build of it.
func crossBuilt(t *testing.T, arch string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/hello\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building for %s: %v\n%s", arch, err, out)
	}
	return bin
}

// machineOf reads the ELF machine of /breakglass in img's one layer.
func machineOf(t *testing.T, img v1.Image) elf.Machine {
	t.Helper()
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no /breakglass in the image: %v", err)
		}
		if h.Name != "breakglass" {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return f.Machine
	}
}

// TestIndex: one index lists an image per architecture under its
// platform, each image holds the binary built for it, and the SBOM
// attached to it names its modules and points at the index.
func TestIndex(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	epoch := time.Unix(0, 0).UTC()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	var images []v1.Image
	var bins []string
	for _, arch := range Arches {
		bin := crossBuilt(t, arch)
		img, err := Build(bin, ca, arch, epoch)
		if err != nil {
			t.Fatal(err)
		}
		images, bins = append(images, img), append(bins, bin)
	}
	idx, err := Index(images...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != len(Arches) {
		t.Fatalf("%d manifests, want one per architecture", len(m.Manifests))
	}
	for i, desc := range m.Manifests {
		if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != Arches[i] {
			t.Errorf("manifest %d: platform %v, want linux/%s", i, desc.Platform, Arches[i])
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if got := machineOf(t, img); got != want[Arches[i]] {
			t.Errorf("the linux/%s image holds a binary for %v", Arches[i], got)
		}
	}

	components, err := GoComponents(bins...)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range components {
		names[c.Name] = true
	}
	if !names["stdlib"] || !names["example.com/hello"] || len(components) != 2 {
		t.Errorf("components %v, want the toolchain and the main module once each", names)
	}
	doc, err := SBOM("breakglass", "dev", epoch, components)
	if err != nil {
		t.Fatal(err)
	}
	bom := cdx.NewBOM()
	if err := cdx.NewBOMDecoder(bytes.NewReader(doc), cdx.BOMFileFormatJSON).Decode(bom); err != nil {
		t.Fatalf("the SBOM is not CycloneDX JSON: %v", err)
	}
	if bom.Metadata.Component.Name != "breakglass" || bom.Components == nil || len(*bom.Components) != 2 ||
		!strings.HasPrefix((*bom.Components)[0].PackageURL, "pkg:golang/") {
		t.Errorf("the SBOM: %s", doc)
	}
	att, err := Attachment(doc, idx)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := att.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	am, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	idxDigest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if am.Subject == nil || am.Subject.Digest != idxDigest || string(am.Config.MediaType) != SBOMArtifactType {
		t.Errorf("the SBOM's manifest: subject %v, config %s; want the index %s and %s", am.Subject, am.Config.MediaType, idxDigest, SBOMArtifactType)
	}
	layers, err := att.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("the SBOM artifact's layers: %v %v", layers, err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	if got, _ := io.ReadAll(rc); !bytes.Equal(got, doc) {
		t.Error("the artifact does not hold the SBOM")
	}
	// The same inputs make the same index.
	again, err := Index(images...)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := partial.Digest(again); d != idxDigest {
		t.Errorf("two indexes of the same images: %s and %s", idxDigest, d)
	}
}

func TestDebianComponent(t *testing.T) {
	c := DebianComponent("busybox-static", "1:1.35.0-4+deb12u1+b1", "arm64")
	if c.PackageURL != "pkg:deb/debian/busybox-static@1:1.35.0-4%2Bdeb12u1%2Bb1?arch=arm64&distro=debian-12" {
		t.Errorf("purl %s", c.PackageURL)
	}
}
