package relay

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/wire"
)

// schemaDoc is relay/openapi.yaml with the Session schemas it refers to.
type schemaDoc struct {
	main, session map[string]any
}

func readSchemas(t *testing.T) schemaDoc {
	t.Helper()
	var d schemaDoc
	for file, into := range map[string]*map[string]any{"openapi.yaml": &d.main, "openapi-session.yaml": &d.session} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	return d
}

// at is the schema at a JSON pointer of the main document, its $ref followed.
func (d schemaDoc) at(t *testing.T, pointer string) map[string]any {
	t.Helper()
	var node any = d.main
	for _, part := range strings.Split(strings.TrimPrefix(pointer, "#/"), "/") {
		node = node.(map[string]any)[strings.ReplaceAll(part, "~1", "/")]
	}
	return d.resolve(t, node)
}

func (d schemaDoc) resolve(t *testing.T, node any) map[string]any {
	t.Helper()
	m, _ := node.(map[string]any)
	ref, _ := m["$ref"].(string)
	switch {
	case ref == "":
		return m
	case strings.HasPrefix(ref, "#/"):
		return d.at(t, ref)
	case strings.HasPrefix(ref, "openapi-session.yaml#/"):
		s, _ := d.session[strings.TrimPrefix(ref, "openapi-session.yaml#/")].(map[string]any)
		return s
	}
	t.Fatalf("a $ref the test does not follow: %s", ref)
	return nil
}

// jsonFields is each field of a struct as JSON names it.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if name == "" && f.Anonymous {
			for k, v := range jsonFields(ft) {
				out[k] = v
			}
			continue
		}
		out[name] = ft
	}
	return out
}

// sameFields fails where schema's properties are not exactly typ's JSON
// fields, here and in every object schema spelled out below it.
func (d schemaDoc) sameFields(t *testing.T, where string, schema map[string]any, typ reflect.Type) {
	t.Helper()
	if items, ok := schema["items"]; ok {
		schema = d.resolve(t, items)
	}
	props, _ := schema["properties"].(map[string]any)
	if typ.Kind() != reflect.Struct || props == nil {
		return
	}
	fields := jsonFields(typ)
	var documented, served []string
	for k := range props {
		documented = append(documented, k)
	}
	for k := range fields {
		served = append(served, k)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("%s: openapi.yaml documents %q, %s has %q", where, documented, typ, served)
		return
	}
	for k, ft := range fields {
		d.sameFields(t, where+"."+k, d.resolve(t, props[k]), ft)
	}
}

// TestOpenAPISchemasAreTheWireTypes: the document the portals' TypeScript
// types are generated from (openapi-typescript, in the npm workspace) has
// exactly the fields the relay's Go types have, and the enums its
// vocabulary has: a field added on one side alone fails here.
func TestOpenAPISchemasAreTheWireTypes(t *testing.T) {
	d := readSchemas(t)
	for pointer, typ := range map[string]reflect.Type{
		"#/components/schemas/Session":                                             reflect.TypeFor[wire.SessionView](),
		"#/components/schemas/Request":                                             reflect.TypeFor[wire.Request](),
		"#/components/schemas/Decision":                                            reflect.TypeFor[wire.Decision](),
		"#/paths/~1api~1v1~1me/get/responses/200/content/application~1json/schema": reflect.TypeFor[Me](),
	} {
		d.sameFields(t, pointer, d.at(t, pointer), typ)
	}
	enums := map[string][]string{
		"#/components/schemas/Session/properties/may/items": v1alpha1.Terms(wire.Offers),
		"#/components/schemas/Request/properties/mode":      v1alpha1.Terms(v1alpha1.ModeTerms),
	}
	for pointer, want := range enums {
		var got []string
		for _, v := range d.at(t, pointer)["enum"].([]any) {
			got = append(got, v.(string))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: the enum is %q, the vocabulary %q", pointer, got, want)
		}
	}
	phase := d.resolve(t, d.session["SessionStatus"].(map[string]any)["properties"].(map[string]any)["phase"])
	var phases []string
	for _, v := range phase["enum"].([]any) {
		phases = append(phases, v.(string))
	}
	if !slices.Equal(phases, v1alpha1.Terms(v1alpha1.PhaseTerms)) {
		t.Errorf("the CRD's phases %q, the words for them %q", phases, v1alpha1.Terms(v1alpha1.PhaseTerms))
	}
}
