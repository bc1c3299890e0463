package policies

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Params are the settings an operator tunes: the chart's `params` values
// (but for protectedNamespaces and requireNamespaceOptIn, which it renders
// into the grant policies' bindings). The chart renders each into the
// policies that read it at install, as a CEL variable (Setting): changing
// one is a `helm upgrade`, no object in the cluster holds them for an edit
// to move, and the API server has no params object to convert for CEL on
// every request.
type Params struct {
	// DebugImages are the debug images a debug container may run, each
	// pinned by digest (repository@sha256:...).
	DebugImages []string `json:"debugImages"`
	// GrantTTL bounds the TTL label on a grant.
	GrantTTL DurationBounds `json:"grantTTL"`
	// SessionDuration bounds a Session's spec.duration.
	SessionDuration DurationBounds `json:"sessionDuration"`
	// Extensions bound the more time an active session may be given.
	Extensions ExtensionBounds `json:"extensions"`
	// RuntimeClasses are the runtime classes a debug container may join a
	// pod in (a sandbox such as gVisor or Kata): a pod in any other runs no
	// debug container, since a runtime's handler may run containers
	// privileged or hand them devices.
	RuntimeClasses []string `json:"runtimeClasses"`
	// DebugUserID is the user id every debug container runs as.
	DebugUserID int64 `json:"debugUserID"`
	// NodeAccessNamespaces are the namespaces, beyond the system ones,
	// where a pod may reach its node on Flight (NodeAccess): the cluster's
	// node agents (a CNI, a log shipper, a node exporter) live there.
	NodeAccessNamespaces []string `json:"nodeAccessNamespaces"`
}

// DurationBounds is an inclusive range of Go durations such as "15m" and "75m".
type DurationBounds struct {
	Min string `json:"min"`
	Max string `json:"max"`
}

// ExtensionBounds bound a session's extensions: how many may be approved,
// and how long the session may run in all, from its start to its last hard
// stop.
type ExtensionBounds struct {
	Max      int32  `json:"max"`
	MaxTotal string `json:"maxTotal"`
}

// The bounds on Params: every expression that walks a list stays cheap,
// and a user id is one Kubernetes takes (runAsUser is at most 2^31-1).
const (
	MaxDebugImages    = 32
	MaxRuntimeClasses = 16
	MaxNamespaces     = 32
	MaxExtensions     = 4
	MaxUserID         = 2147483647
)

// DefaultParams are the chart's params when its values are left alone, with
// the given debug images allowed.
func DefaultParams(debugImages ...string) Params {
	return Params{
		DebugImages:     append([]string{}, debugImages...),
		GrantTTL:        DurationBounds{Min: "15m", Max: "75m"},
		SessionDuration: DurationBounds{Min: "15m", Max: "75m"},
		// Spelled as the chart's values spell it, so that the chart and
		// this Go twin render the same expression.
		Extensions:           ExtensionBounds{Max: v1alpha1.DefaultMaxExtensions, MaxTotal: "2h"},
		RuntimeClasses:       []string{},
		DebugUserID:          v1alpha1.DebugUserID,
		NodeAccessNamespaces: []string{},
	}
}

var (
	digestRef  = regexp.MustCompile(strings.ReplaceAll(digestPattern, `\\`, `\`))
	durationRE = regexp.MustCompile(durationPattern)
)

// Validate says what is wrong with p, each problem at its path under the
// chart's params values, as the values schema refuses it at install.
func (p Params) Validate() field.ErrorList {
	var errs field.ErrorList
	root := field.NewPath("params")
	if len(p.DebugImages) > MaxDebugImages {
		errs = append(errs, field.TooMany(root.Child("debugImages"), len(p.DebugImages), MaxDebugImages))
	}
	for i, img := range p.DebugImages {
		if len(img) > 512 || !digestRef.MatchString(img) {
			errs = append(errs, field.Invalid(root.Child("debugImages").Index(i), img, "must be pinned by digest, as REPOSITORY@sha256:<64 hex>, in at most 512 characters"))
		}
	}
	errs = append(errs, p.GrantTTL.validate(root.Child("grantTTL"))...)
	errs = append(errs, p.SessionDuration.validate(root.Child("sessionDuration"))...)
	if p.Extensions.Max < 0 || p.Extensions.Max > MaxExtensions {
		errs = append(errs, field.Invalid(root.Child("extensions", "max"), p.Extensions.Max, fmt.Sprintf("must be from 0 to %d", MaxExtensions)))
	}
	if _, err := parseDuration(p.Extensions.MaxTotal); err != nil {
		errs = append(errs, field.Invalid(root.Child("extensions", "maxTotal"), p.Extensions.MaxTotal, err.Error()))
	}
	if len(p.RuntimeClasses) > MaxRuntimeClasses {
		errs = append(errs, field.TooMany(root.Child("runtimeClasses"), len(p.RuntimeClasses), MaxRuntimeClasses))
	}
	for i, rc := range p.RuntimeClasses {
		for _, msg := range validation.IsDNS1123Subdomain(rc) {
			errs = append(errs, field.Invalid(root.Child("runtimeClasses").Index(i), rc, msg))
		}
	}
	if len(p.NodeAccessNamespaces) > MaxNamespaces {
		errs = append(errs, field.TooMany(root.Child("nodeAccessNamespaces"), len(p.NodeAccessNamespaces), MaxNamespaces))
	}
	for i, ns := range p.NodeAccessNamespaces {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(root.Child("nodeAccessNamespaces").Index(i), ns, msg))
		}
	}
	if p.DebugUserID < 1 || p.DebugUserID > MaxUserID {
		errs = append(errs, field.Invalid(root.Child("debugUserID"), p.DebugUserID,
			fmt.Sprintf("must be a user id from 1 to %d: a debug container never runs as root, and Kubernetes takes no larger id", MaxUserID)))
	}
	return errs
}

func (b DurationBounds) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	lo, err := parseDuration(b.Min)
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("min"), b.Min, err.Error()))
	}
	hi, err2 := parseDuration(b.Max)
	if err2 != nil {
		errs = append(errs, field.Invalid(path.Child("max"), b.Max, err2.Error()))
	}
	if err == nil && err2 == nil && lo > hi {
		errs = append(errs, field.Invalid(path.Child("max"), b.Max, "must not be less than min ("+b.Min+")"))
	}
	return errs
}

// parseDuration reads the Go duration subset the policies compare: hours,
// minutes and seconds, as in "1h30m".
func parseDuration(s string) (time.Duration, error) {
	if s == "" || len(s) > 16 || !durationRE.MatchString(s) {
		return 0, fmt.Errorf("must be a duration such as 15m or 1h30m")
	}
	return time.ParseDuration(s)
}

// Setting is one of Params' values as the policies read it: the CEL
// variable variables.<Variable>, which the chart binds at install to the
// value at Path (dotted) in its params values.
type Setting struct {
	Variable string
	Path     string
}

// The settings the policies read.
var (
	DebugImagesSetting          = Setting{Variable: "paramsDebugImages", Path: "debugImages"}
	DebugUserIDSetting          = Setting{Variable: "paramsDebugUserID", Path: "debugUserID"}
	RuntimeClassesSetting       = Setting{Variable: "paramsRuntimeClasses", Path: "runtimeClasses"}
	GrantTTLMinSetting          = Setting{Variable: "paramsGrantTTLMin", Path: "grantTTL.min"}
	GrantTTLMaxSetting          = Setting{Variable: "paramsGrantTTLMax", Path: "grantTTL.max"}
	SessionDurationMinSetting   = Setting{Variable: "paramsSessionDurationMin", Path: "sessionDuration.min"}
	SessionDurationMaxSetting   = Setting{Variable: "paramsSessionDurationMax", Path: "sessionDuration.max"}
	ExtensionsMaxSetting        = Setting{Variable: "paramsExtensionsMax", Path: "extensions.max"}
	ExtensionsMaxTotalSetting   = Setting{Variable: "paramsExtensionsMaxTotal", Path: "extensions.maxTotal"}
	NodeAccessNamespacesSetting = Setting{Variable: "paramsNodeAccessNamespaces", Path: "nodeAccessNamespaces"}
)

// Settings lists every setting, in a fixed order.
var Settings = []Setting{
	DebugImagesSetting, DebugUserIDSetting, RuntimeClassesSetting,
	GrantTTLMinSetting, GrantTTLMaxSetting, SessionDurationMinSetting, SessionDurationMaxSetting,
	ExtensionsMaxSetting, ExtensionsMaxTotalSetting, NodeAccessNamespacesSetting,
}

// Ref is the setting as an expression reads it.
func (s Setting) Ref() string { return "variables." + s.Variable }

// Literal is the setting's value in p as a CEL literal: its JSON, which is
// CEL for the strings, integers and lists of strings Params holds. The
// chart's template writes the same (toJson), so both agree byte for byte.
func (s Setting) Literal(p Params) (string, error) {
	var v any
	b, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return "", err
	}
	for _, k := range strings.Split(s.Path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("setting %s: %s is no field of the params", s.Variable, s.Path)
		}
		if v, ok = m[k]; !ok {
			return "", fmt.Errorf("setting %s: %s is no field of the params", s.Variable, s.Path)
		}
	}
	if v == nil {
		// A list left nil means none allowed, as the chart's [] does.
		v = []any{}
	}
	out, err := json.Marshal(v)
	return string(out), err
}

// WithParams is p with the settings it reads bound to their values in
// params: one variable each, ahead of p's own, so that every expression of
// p reads the value the chart renders at install.
func (p Policy) WithParams(params Params) (Policy, error) {
	vars := make([]Variable, 0, len(p.Settings)+len(p.Variables))
	for _, s := range p.Settings {
		lit, err := s.Literal(params)
		if err != nil {
			return Policy{}, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		vars = append(vars, Variable{Name: s.Variable, Expression: lit})
	}
	p.Variables = append(vars, p.Variables...)
	return p, nil
}
