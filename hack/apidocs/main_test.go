package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const crds = "../../charts/breakglass/crds"

// TestEveryFieldDescribed: kubectl explain has something to say about
// every field of Session, spec and status.
func TestEveryFieldDescribed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(crds, "*.yaml"))
	if err != nil || len(files) != 1 {
		t.Fatalf("the CRDs: %v %v", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatal(err)
		}
		root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		var walk func(path string, s apiextensionsv1.JSONSchemaProps)
		walk = func(path string, s apiextensionsv1.JSONSchemaProps) {
			if strings.TrimSpace(s.Description) == "" {
				t.Errorf("%s: %s has no description", crd.Spec.Names.Kind, path)
			}
			if s.Items != nil && s.Items.Schema != nil {
				s = *s.Items.Schema
			}
			for name, p := range s.Properties {
				walk(path+"."+name, p)
			}
		}
		for _, top := range []string{"spec", "status"} {
			if p, ok := root.Properties[top]; ok {
				walk(top, p)
			}
		}
	}
}

// TestDocIsCurrent: docs/api.md is what render writes now.
func TestDocIsCurrent(t *testing.T) {
	want, err := render(crds)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("docs/api.md is stale: run make generate")
	}
}
