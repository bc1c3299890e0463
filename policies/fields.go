package policies

import (
	"fmt"
	"slices"
	"sort"
)

// Every field of what the plane admits has a verdict (fieldtable.go): for
// a debug container (its own fields, and the fields of the pod it joins,
// which it inherits) and for a copy pod (its spec and every container).
// The rules that allow only judged fields are generated from the table
// (fieldsJudgedExpr), so a field Kubernetes adds later is refused until
// someone judges it, and a test fails on every field a claimed version
// serves that the table does not name (test/integration, FieldsJudged).

// Judgement is what the plane does with a field in one place.
type Judgement string

// The judgements.
const (
	// Allowed: as it comes. It hands out nothing a debug session must not
	// have (a name, a command, a scheduling hint).
	Allowed Judgement = "allowed"
	// Bounded: allowed within the bounds How says, which Rules hold.
	Bounded Judgement = "bounded"
	// SetByRelay: the relay sets it to what How says; Rules hold any other
	// value back.
	SetByRelay Judgement = "set by the relay"
	// Refused: never set here. The generated rule refuses it (and Rules
	// name any other that does too).
	Refused Judgement = "refused"
	// APIRefuses: the API server itself refuses a value here (an ephemeral
	// container's ports or probes, say); it may appear empty.
	APIRefuses Judgement = "refused by the API server"
)

// Verdict is one field's judgement in one place.
type Verdict struct {
	Judgement Judgement
	// How says the bound, the value, or why the field is harmless as it
	// comes: what the kubelet, the runtime or the scheduler do with it.
	How string
	// Rules are the validations that hold it (their names).
	Rules []string
}

// Place is where the plane admits a field.
type Place string

// The places.
const (
	// InDebug: a debug container, its own fields (EphemeralContainer and
	// what it holds), and the pod it joins (PodSpec, PodSecurityContext,
	// Volume), whose settings it inherits.
	InDebug Place = "debug"
	// InCopy: a copy pod, its spec and every container in it.
	InCopy Place = "copy"
)

// Words name the place as a sentence does ("in a debug container").
func (p Place) Words() string {
	if p == InDebug {
		return "debug container"
	}
	return "copy"
}

// Places are the places, in order.
var Places = []Place{InDebug, InCopy}

// Schema is one object type of the core API that the table judges, named
// as the OpenAPI documents name it (io.k8s.api.core.v1.<Name>), and the
// places it is judged in.
type Schema struct {
	Name   string
	Places []Place
}

// Schemas are the types the table judges.
var Schemas = []Schema{
	{"PodSpec", Places},
	{"PodSecurityContext", Places},
	{"Container", []Place{InCopy}},
	{"EphemeralContainer", []Place{InDebug}},
	{"SecurityContext", Places},
	{"ResourceRequirements", []Place{InCopy}},
	{"VolumeMount", Places},
	// A debug container has no env at all (EphemeralContainer.env).
	{"EnvVarSource", []Place{InCopy}},
	{"EnvFromSource", []Place{InCopy}},
	{"Volume", Places},
	{"VolumeProjection", Places},
}

// generatedRules name the rule generated from the table that holds each
// schema's fields in each place: what it refuses is refused there.
var generatedRules = map[string]map[Place]string{
	"PodSpec":              {InDebug: ruleDebugPodFields, InCopy: ruleCopySpecFields},
	"PodSecurityContext":   {InDebug: ruleDebugPodFields, InCopy: ruleCopySpecFields},
	"Container":            {InCopy: ruleCopyFields},
	"EphemeralContainer":   {InDebug: ruleDebugFields},
	"SecurityContext":      {InDebug: ruleDebugFields, InCopy: ruleCopyFields},
	"ResourceRequirements": {InCopy: ruleCopyFields},
	"VolumeMount":          {InDebug: ruleDebugFields, InCopy: ruleCopyFields},
	"EnvVarSource":         {InCopy: ruleCopyFields},
	"EnvFromSource":        {InCopy: ruleCopyFields},
	"Volume":               {InDebug: ruleDebugMounted, InCopy: ruleCopyVolumes},
	"VolumeProjection":     {InDebug: ruleDebugMounted, InCopy: ruleCopyVolumes},
}

// GeneratedRule is the rule generated from the table that holds schema's
// fields in place.
func GeneratedRule(schema string, place Place) string { return generatedRules[schema][place] }

// Verdicts is the table: schema, field, place.
func Verdicts() map[string]map[string]map[Place]Verdict { return fieldTable }

// VerdictOf is the verdict of schema's field in place, if the table has one.
func VerdictOf(schema, field string, place Place) (Verdict, bool) {
	v, ok := fieldTable[schema][field][place]
	return v, ok
}

// judgedFields are the fields of schema that may be set in place: every
// one the table judges, but those it refuses outright. Sorted, so the
// rules are the same at every build.
func judgedFields(schema string, place Place) []string {
	var out []string
	for f, byPlace := range fieldTable[schema] {
		if v, ok := byPlace[place]; ok && v.Judgement != Refused {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// fieldsJudgedExpr is true when the object expr sets only fields of schema
// that may be set in place. dyn(): the type checker would not let an
// object's fields be iterated; at run time the object is a map, its keys
// the fields set.
func fieldsJudgedExpr(expr, schema string, place Place, also ...string) string {
	names := append(judgedFields(schema, place), also...)
	slices.Sort(names)
	return fmt.Sprintf(`dyn(%s).all(k, k in %s)`, expr, celList(names))
}

// unjudgedMessage names what fieldsJudgedExpr refuses, for a rule's message.
func unjudgedMessage(rule, what string) string {
	return fmt.Sprintf("[%s] %s sets a field this plane has not judged, or one it refuses (docs/policies.md, \"Every field judged\"): "+
		"a field Kubernetes added since is refused until it is judged.", rule, what)
}
