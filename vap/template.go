package vap

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/policies"
)

// The chart ships the policies with each setting's variable bound to a
// placeholder, and its template replaces every placeholder with the value
// from its params values at install (templates/generated/plane.yaml):
// changing a setting is one `helm upgrade`. RenderTemplate makes the same
// replacement in Go, for the tests and the local plane, which install what
// the chart ships; test/chart holds the two to the same objects.

// Placeholder is the expression a setting's variable has in the chart's
// files before its template renders them: CEL that compiles (so the API
// server admits a policy installed without rendering, rather than leaving
// it out) and fails whenever it is read (so that policy denies every
// request it judges: fail closed), naming the setting.
func Placeholder(s policies.Setting) string { return "dyn(['@params." + s.Path + "@'])[1]" }

// PlaceholderYAML is Placeholder as the chart's files spell it: a YAML
// scalar written by manifests.YAML.
func PlaceholderYAML(s policies.Setting) (string, error) {
	b, err := yaml.Marshal(Placeholder(s))
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// BuildTemplate builds the policies of profile as the chart ships them:
// checked with the default params bound, then each setting's variable
// bound to its Placeholder instead.
func BuildTemplate(profile policies.Profile) ([]Pair, error) {
	pairs, err := BuildAll(profile, policies.DefaultParams())
	if err != nil {
		return nil, err
	}
	settings := map[string]policies.Setting{}
	for _, s := range policies.Settings {
		settings[s.Variable] = s
	}
	for _, pr := range pairs {
		for i, v := range pr.Policy.Spec.Variables {
			if s, ok := settings[v.Name]; ok {
				pr.Policy.Spec.Variables[i].Expression = Placeholder(s)
			}
		}
	}
	return pairs, nil
}

// RenderTemplate renders a stream of the chart's files with params, as its
// template does at install: each placeholder becomes the setting's CEL
// literal (its JSON) in a YAML double-quoted scalar, as Helm's
// `toJson | quote` writes it.
func RenderTemplate(stream []byte, params policies.Params) ([]byte, error) {
	if errs := params.Validate(); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	// One pass, so that no value rendered is read again as a placeholder.
	var pairs []string
	for _, s := range policies.Settings {
		old, err := PlaceholderYAML(s)
		if err != nil {
			return nil, err
		}
		lit, err := s.Literal(params)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, old, strconv.Quote(lit))
	}
	stream = []byte(strings.NewReplacer(pairs...).Replace(string(stream)))
	if i := bytes.Index(stream, []byte("@params.")); i >= 0 {
		end := min(len(stream), i+64)
		return nil, fmt.Errorf("a placeholder no setting renders: %q", stream[i:end])
	}
	return stream, nil
}
