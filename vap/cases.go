package vap

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/policies"
)

// CaseFile is a file of policy test cases: requests and what the policies
// should say to them. It is what `kubectl breakglass policy test` reads.
type CaseFile struct {
	// Path is where the file was read from.
	Path string `json:"-"`
	// Profiles the cases run in; both when empty.
	Profiles []policies.Profile `json:"profiles,omitempty"`
	// Params are set over the chart's default params (policies.Params),
	// each named field whole, and rendered into the policies for every case.
	Params map[string]any `json:"params,omitempty"`
	// Values are the chart's values that bind its ChartBound policies, as
	// the chart renders them at install.
	Values *CaseValues `json:"values,omitempty"`
	Cases  []Case      `json:"cases"`
}

// CaseValues are the chart values a case file installs the policies with.
type CaseValues struct {
	ProtectedNamespaces   []string `json:"protectedNamespaces,omitempty"`
	RequireNamespaceOptIn bool     `json:"requireNamespaceOptIn,omitempty"`
}

// Case is one request and the expected answer.
type Case struct {
	Name string `json:"name"`
	// Profiles overrides the file's profiles for this case.
	Profiles  []policies.Profile `json:"profiles,omitempty"`
	Operation string             `json:"operation"`
	// APIGroup is the resource's group ("" for core); Resource may name a
	// subresource as in "pods/exec".
	APIGroup  string `json:"apiGroup,omitempty"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	// NamespaceLabels are the labels of the request's namespace object;
	// NamespaceTerminating says it is being deleted.
	NamespaceLabels      map[string]string `json:"namespaceLabels,omitempty"`
	NamespaceTerminating bool              `json:"namespaceTerminating,omitempty"`
	User                 CaseUser          `json:"user"`
	Object               map[string]any    `json:"object,omitempty"`
	OldObject            map[string]any    `json:"oldObject,omitempty"`
	// Permissions are what the authorizer answers "allowed" to.
	Permissions []Permission `json:"permissions,omitempty"`
	// Expect is "allow" or "deny".
	Expect string `json:"expect"`
	// Message must appear in the denial (only with expect: deny).
	Message string `json:"message,omitempty"`
}

// CaseUser is who makes the request.
type CaseUser struct {
	Name   string   `json:"name"`
	Groups []string `json:"groups,omitempty"`
	// Extra is what the authenticator says beside name and groups: a pod's
	// own ServiceAccount token carries authentication.kubernetes.io/pod-name.
	Extra map[string][]string `json:"extra,omitempty"`
}

// LoadCaseFile reads and checks one case file. Every problem names the file
// and the field.
func LoadCaseFile(path string) (CaseFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return CaseFile{}, err
	}
	cf, err := ParseCaseFile(data)
	if err != nil {
		return CaseFile{}, fmt.Errorf("%s: %w", path, err)
	}
	cf.Path = path
	return cf, nil
}

// ParseCaseFile parses a case file; unknown fields are errors, so a typo
// never turns into a case that checks nothing. Numbers in objects decode as
// float64; integers turns the whole ones back.
func ParseCaseFile(data []byte) (CaseFile, error) {
	// Merge keys (<<: *base) override fields, which strict YAML refuses;
	// strictness comes from the JSON decoder instead.
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return CaseFile{}, fmt.Errorf("not YAML: %w", err)
	}
	var cf CaseFile
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cf); err != nil {
		return CaseFile{}, fmt.Errorf("not a case file: %w", err)
	}
	for i := range cf.Cases {
		integers(cf.Cases[i].Object)
		integers(cf.Cases[i].OldObject)
	}
	if len(cf.Cases) == 0 {
		return CaseFile{}, fmt.Errorf("cases: the file has no cases")
	}
	if err := checkProfiles("profiles", cf.Profiles); err != nil {
		return CaseFile{}, err
	}
	names := map[string]bool{}
	for i, c := range cf.Cases {
		at := fmt.Sprintf("cases[%d]", i)
		if c.Name != "" {
			at = fmt.Sprintf("cases[%d] (%s)", i, c.Name)
		}
		switch {
		case c.Name == "":
			return CaseFile{}, fmt.Errorf("%s.name: required", at)
		case names[c.Name]:
			return CaseFile{}, fmt.Errorf("%s.name: used twice", at)
		case c.Resource == "":
			return CaseFile{}, fmt.Errorf("%s.resource: required, e.g. rolebindings or pods/exec", at)
		case strings.Count(c.Resource, "/") > 1:
			return CaseFile{}, fmt.Errorf("%s.resource: %q is not resource or resource/subresource", at, c.Resource)
		case c.User.Name == "":
			return CaseFile{}, fmt.Errorf("%s.user.name: required", at)
		case c.Expect != "allow" && c.Expect != "deny":
			return CaseFile{}, fmt.Errorf("%s.expect: %q must be allow or deny", at, c.Expect)
		case c.Message != "" && c.Expect != "deny":
			return CaseFile{}, fmt.Errorf("%s.message: only a denial has a message", at)
		case c.Object == nil && c.Operation != string(admissionregistrationv1.Delete):
			return CaseFile{}, fmt.Errorf("%s.object: required for %s", at, c.Operation)
		}
		switch admissionregistrationv1.OperationType(c.Operation) {
		case admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.Connect:
		default:
			return CaseFile{}, fmt.Errorf("%s.operation: %q must be CREATE, UPDATE, DELETE or CONNECT", at, c.Operation)
		}
		if err := checkProfiles(at+".profiles", c.Profiles); err != nil {
			return CaseFile{}, err
		}
		for _, o := range []struct {
			field string
			obj   map[string]any
		}{{"object", c.Object}, {"oldObject", c.OldObject}} {
			if o.obj == nil {
				continue
			}
			if av, _ := o.obj["apiVersion"].(string); av == "" {
				return CaseFile{}, fmt.Errorf("%s.%s.apiVersion: required", at, o.field)
			}
			if k, _ := o.obj["kind"].(string); k == "" {
				return CaseFile{}, fmt.Errorf("%s.%s.kind: required", at, o.field)
			}
		}
		names[c.Name] = true
	}
	return cf, nil
}

func checkProfiles(field string, ps []policies.Profile) error {
	for _, p := range ps {
		if p != policies.Ground && p != policies.Flight {
			return fmt.Errorf("%s: %q is not ground or flight", field, p)
		}
	}
	return nil
}

// LoadCaseDir reads every .yaml and .yml file in dir, in name order.
func LoadCaseDir(dir string) ([]CaseFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []CaseFile
	for _, e := range entries {
		if e.IsDir() || (!strings.HasSuffix(e.Name(), ".yaml") && !strings.HasSuffix(e.Name(), ".yml")) {
			continue
		}
		cf, err := LoadCaseFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files = append(files, cf)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no case files (*.yaml)", dir)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// CaseResult is one case run in one profile.
type CaseResult struct {
	File    string
	Case    string
	Profile policies.Profile
	Expect  string
	Got     string
	// Detail is the denial, or why the case failed.
	Detail string
	Pass   bool
	// Matched names the policies that took up the request.
	Matched []string
}

// Runner runs case files through the built policies of each profile.
type Runner struct {
	// built holds each profile's policies per params they were built
	// with (by their JSON): case files mostly share a few.
	built map[string]map[policies.Profile][]Pair
}

// NewRunner builds and checks the policies of both profiles with the
// chart's default params; it builds them for the params a case file names
// as it meets them.
func NewRunner() (*Runner, error) {
	r := &Runner{built: map[string]map[policies.Profile][]Pair{}}
	if _, err := r.pairs(policies.DefaultParams()); err != nil {
		return nil, err
	}
	return r, nil
}

// pairs builds the policies of every profile with params, once.
func (r *Runner) pairs(params policies.Params) (map[policies.Profile][]Pair, error) {
	key, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	if got, ok := r.built[string(key)]; ok {
		return got, nil
	}
	out := map[policies.Profile][]Pair{}
	for _, p := range policies.Profiles {
		if out[p], err = BuildAll(p, params); err != nil {
			return nil, err
		}
	}
	r.built[string(key)] = out
	return out, nil
}

// evaluators compiles each profile's policies as cf installs them: built
// with its params, bound with its values.
func (r *Runner) evaluators(cf CaseFile) (map[policies.Profile]*Evaluator, error) {
	params, err := paramsFor(cf.Params)
	if err != nil {
		return nil, fmt.Errorf("%s: params: %w", cf.Path, err)
	}
	built, err := r.pairs(params)
	if err != nil {
		return nil, fmt.Errorf("%s: params: %w", cf.Path, err)
	}
	out := map[policies.Profile]*Evaluator{}
	for p, pairs := range built {
		if v := cf.Values; v != nil {
			pairs = Bind(pairs, ChartValues{ProtectedNamespaces: v.ProtectedNamespaces, RequireNamespaceOptIn: v.RequireNamespaceOptIn})
		}
		out[p] = NewEvaluator(pairs)
	}
	return out, nil
}

// Run runs every case of cf in each of its profiles.
func (r *Runner) Run(ctx context.Context, cf CaseFile) ([]CaseResult, error) {
	evaluators, err := r.evaluators(cf)
	if err != nil {
		return nil, err
	}
	var out []CaseResult
	for _, c := range cf.Cases {
		profiles := c.Profiles
		if len(profiles) == 0 {
			profiles = cf.Profiles
		}
		if len(profiles) == 0 {
			profiles = policies.Profiles
		}
		for _, profile := range profiles {
			res := evaluators[profile].Evaluate(ctx, c.request())
			out = append(out, judge(cf.Path, c, profile, res))
		}
	}
	return out, nil
}

func judge(path string, c Case, profile policies.Profile, res Result) CaseResult {
	cr := CaseResult{File: filepath.Base(path), Case: c.Name, Profile: profile, Expect: c.Expect, Got: "allow", Matched: res.Matched}
	if !res.Allowed() {
		cr.Got = "deny"
		msgs := make([]string, len(res.Denials))
		for i, d := range res.Denials {
			msgs[i] = d.Error()
		}
		cr.Detail = strings.Join(msgs, "; ")
	}
	cr.Pass = cr.Got == c.Expect
	if cr.Pass && c.Message != "" && !strings.Contains(cr.Detail, c.Message) {
		cr.Pass = false
		cr.Detail = fmt.Sprintf("the denial does not say %q: %s", c.Message, cr.Detail)
	}
	return cr
}

func (c Case) request() Request {
	resource, sub, _ := strings.Cut(c.Resource, "/")
	req := Request{
		Operation:       admissionregistrationv1.OperationType(c.Operation),
		Resource:        schema.GroupVersionResource{Group: c.APIGroup, Version: "v1", Resource: resource},
		SubResource:     sub,
		Namespace:       c.Namespace,
		NamespaceLabels: c.NamespaceLabels,
		Object:          c.Object,
		OldObject:       c.OldObject,
		User:            &user.DefaultInfo{Name: c.User.Name, Groups: c.User.Groups, Extra: c.User.Extra},
		Allowed:         c.Permissions,
	}
	if c.NamespaceTerminating {
		req.NamespacePhase = corev1.NamespaceTerminating
	}
	for _, o := range []map[string]any{c.Object, c.OldObject} {
		if o != nil {
			u := unstructured.Unstructured{Object: o}
			req.Kind = u.GroupVersionKind()
			req.Name = u.GetName()
			req.Resource.Version = req.Kind.Version
			if c.Operation == string(admissionregistrationv1.Connect) {
				req.Resource.Version = "v1"
			}
			break
		}
	}
	return req
}

// paramsFor sets overrides over the chart's default params, each a whole
// field of policies.Params: a field it does not have is an error, never a
// setting silently left out.
func paramsFor(overrides map[string]any) (policies.Params, error) {
	def, err := json.Marshal(policies.DefaultParams())
	if err != nil {
		return policies.Params{}, err
	}
	var merged map[string]any
	if err := json.Unmarshal(def, &merged); err != nil {
		return policies.Params{}, err
	}
	for k, v := range overrides {
		merged[k] = v
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return policies.Params{}, err
	}
	var params policies.Params
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&params); err != nil {
		return policies.Params{}, err
	}
	if errs := params.Validate(); len(errs) > 0 {
		return policies.Params{}, errs.ToAggregate()
	}
	return params, nil
}

// integers turns the whole float64 numbers YAML decoding leaves into int64,
// as the API server's decoding would, so CEL compares them as integers.
func integers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = integers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = integers(e)
		}
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t)
		}
	}
	return v
}
