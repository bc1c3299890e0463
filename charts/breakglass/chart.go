// Package chart exposes the chart's CRDs and generated manifests to Go, so
// the tests and the CLI install exactly the files the chart ships.
package chart

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
)

//go:embed crds/*.yaml files/*.yaml
var files embed.FS

// CRDs returns the chart's CustomResourceDefinition files, in name order.
func CRDs() ([][]byte, error) {
	names, err := fs.Glob(files, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([][]byte, 0, len(names))
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// Plane returns the generated manifests the chart installs for profile:
// ServiceAccounts, roles, bindings, admission policies and their bindings.
func Plane(profile string) ([]byte, error) {
	b, err := files.ReadFile("files/" + profile + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no generated manifests for profile %q: %w", profile, err)
	}
	return b, nil
}
