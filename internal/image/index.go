package image

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/package-url/packageurl-go"
)

// SBOMArtifactType is what an SBOM attached to an index says it is, for
// a registry's referrers API (`oras discover`, `cosign tree`).
const SBOMArtifactType = "application/vnd.cyclonedx+json"

// Index is one OCI image index of images, each listed with its platform
// (from its config), in the order given.
func Index(images ...v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, img := range images {
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture},
		}})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

// SBOM is a CycloneDX document for the image called name in version,
// whose parts are components.
func SBOM(name, version string, created time.Time, components []cdx.Component) ([]byte, error) {
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{
		Timestamp: created.UTC().Format(time.RFC3339),
		Component: &cdx.Component{Type: cdx.ComponentTypeContainer, Name: name, Version: version},
	}
	sort.Slice(components, func(i, j int) bool { return components[i].BOMRef < components[j].BOMRef })
	bom.Components = &components
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	if err := enc.Encode(bom); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// GoComponents are the Go modules the binaries were built from, as their
// build information records them (the toolchain, the main module and
// every dependency, each with its go.sum hash), once each across them.
func GoComponents(binaries ...string) ([]cdx.Component, error) {
	seen := map[string]bool{}
	var out []cdx.Component
	add := func(path, version, sum string) {
		purl := packageurl.NewPackageURL(packageurl.TypeGolang, "", path, version, nil, "").ToString()
		if seen[purl] {
			return
		}
		seen[purl] = true
		c := cdx.Component{BOMRef: purl, Type: cdx.ComponentTypeLibrary, Name: path, Version: version, PackageURL: purl}
		if sum != "" {
			c.Properties = &[]cdx.Property{{Name: "go:sum", Value: sum}}
		}
		out = append(out, c)
	}
	for _, bin := range binaries {
		info, err := buildinfo.ReadFile(bin)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", bin, err)
		}
		add("stdlib", info.GoVersion, "")
		add(info.Main.Path, info.Main.Version, info.Main.Sum)
		for _, dep := range info.Deps {
			if dep.Replace != nil {
				dep = dep.Replace
			}
			add(dep.Path, dep.Version, dep.Sum)
		}
	}
	return out, nil
}

// DebianComponent is a Debian package in the image, for linux/arch.
func DebianComponent(pkg, version, arch string) cdx.Component {
	purl := packageurl.NewPackageURL(packageurl.TypeDebian, "debian", pkg, version,
		packageurl.Qualifiers{{Key: "arch", Value: arch}, {Key: "distro", Value: "debian-12"}}, "").ToString()
	return cdx.Component{BOMRef: purl, Type: cdx.ComponentTypeApplication, Name: pkg, Version: version, PackageURL: purl}
}

// Attachment is an OCI artifact holding sbom, whose subject is the index
// it describes: what a registry lists among the index's referrers.
func Attachment(sbom []byte, subject v1.ImageIndex) (v1.Image, error) {
	desc, err := partial.Descriptor(subject)
	if err != nil {
		return nil, err
	}
	layer := static.NewLayer(sbom, types.MediaType(SBOMArtifactType))
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{Layer: layer})
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.MediaType(SBOMArtifactType))
	return mutate.Subject(img, *desc).(v1.Image), nil
}

// RefNameAnnotation names each index and SBOM in the layout make image
// writes: NAME:VERSION, and NAME:VERSION.sbom for the index's SBOM.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// FromLayout reads the index called name (any version) and its SBOM from
// the OCI layout at dir, as make image writes it.
func FromLayout(dir, name string) (v1.ImageIndex, v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, nil, err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, nil, err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, nil, err
	}
	var idx v1.ImageIndex
	var sbom v1.Image
	for _, d := range m.Manifests {
		ref := d.Annotations[RefNameAnnotation]
		if !strings.HasPrefix(ref, name+":") {
			continue
		}
		if strings.HasSuffix(ref, ".sbom") {
			sbom, err = top.Image(d.Digest)
		} else {
			idx, err = top.ImageIndex(d.Digest)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s in %s: %w", ref, dir, err)
		}
	}
	if idx == nil || sbom == nil {
		return nil, nil, fmt.Errorf("%s holds no index called %s with its SBOM: make image writes them", dir, name)
	}
	return idx, sbom, nil
}
