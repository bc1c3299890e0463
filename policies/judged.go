package policies

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The rules generated from the table (fieldtable.go): each object the
// plane admits sets only the fields judged for its place. They refuse a
// field Kubernetes adds later, and a field the table refuses; the other
// rules hold the bounds.

// listOf is the list at expr, or an empty one where the API server stores
// none: absent, or null (a projected volume written with sources: [] is
// stored with sources null, which no macro iterates).
func listOf(expr string) string {
	parent, field := expr[:strings.LastIndex(expr, ".")], expr[strings.LastIndex(expr, ".")+1:]
	return fmt.Sprintf(`(dyn(%s.?%s.orValue([])) != null ? %s.?%s.orValue([]) : [])`, parent, field, parent, field)
}

// mountableVolumesExpr names the pod's volumes a debug container may
// mount: those whose source the table lets a debug container mount, and
// projections only of sources it lets one mount. A source Kubernetes adds
// later is not mountable until it is judged.
var mountableVolumesExpr = fmt.Sprintf(`%s.filter(v, %s &&
	(!has(v.projected) || %s.all(s, %s))).map(v, v.name)`,
	listOf("object.spec.volumes"), fieldsJudgedExpr("v", "Volume", InDebug),
	listOf("v.projected.sources"), fieldsJudgedExpr("s", "VolumeProjection", InDebug))

// debugFields are the rules that an added debug container, and the pod it
// joins, set only judged fields.
func debugFields() []Validation {
	return []Validation{
		{
			Name: ruleDebugFields,
			Expression: fmt.Sprintf(`variables.added.all(c, %s &&
				(!has(c.securityContext) || %s) &&
				%s.all(m, %s))`,
				fieldsJudgedExpr("c", "EphemeralContainer", InDebug), fieldsJudgedExpr("c.securityContext", "SecurityContext", InDebug),
				listOf("c.volumeMounts"), fieldsJudgedExpr("m", "VolumeMount", InDebug)),
			Message: unjudgedMessage(ruleDebugFields, "this debug container (or its securityContext or a volume mount)"),
		},
		{
			Name: ruleDebugPodFields,
			Expression: fmt.Sprintf(`size(variables.added) == 0 || (%s &&
				(!has(object.spec.securityContext) || %s))`,
				fieldsJudgedExpr("object.spec", "PodSpec", InDebug), fieldsJudgedExpr("object.spec.securityContext", "PodSecurityContext", InDebug)),
			Message: unjudgedMessage(ruleDebugPodFields, "the pod (its spec or securityContext), whose settings a debug container in it would share,"),
		},
	}
}

// copyFields are the rules that a copy, and every container in it, set
// only judged fields; that its containers ask for no resource but the
// node's own; and that it lives no longer than its grant.
func copyFields() []Validation {
	return []Validation{
		{
			Name: ruleCopySpecFields,
			Expression: fmt.Sprintf(`%s && (!has(object.spec.securityContext) || %s)`,
				fieldsJudgedExpr("object.spec", "PodSpec", InCopy), fieldsJudgedExpr("object.spec.securityContext", "PodSecurityContext", InCopy)),
			Message: unjudgedMessage(ruleCopySpecFields, "the copy's spec (or its securityContext)"),
		},
		{
			Name: ruleCopyFields,
			Expression: fmt.Sprintf(`variables.all.all(c, %s &&
				(!has(c.securityContext) || %s) &&
				(!has(c.resources) || %s) &&
				%s.all(m, %s) &&
				%s.all(e, !has(e.valueFrom) || %s) &&
				%s.all(f, %s))`,
				fieldsJudgedExpr("c", "Container", InCopy), fieldsJudgedExpr("c.securityContext", "SecurityContext", InCopy),
				fieldsJudgedExpr("c.resources", "ResourceRequirements", InCopy),
				listOf("c.volumeMounts"), fieldsJudgedExpr("m", "VolumeMount", InCopy),
				listOf("c.env"), fieldsJudgedExpr("e.valueFrom", "EnvVarSource", InCopy),
				listOf("c.envFrom"), fieldsJudgedExpr("f", "EnvFromSource", InCopy)),
			Message: unjudgedMessage(ruleCopyFields, "a container of the copy (or its securityContext, resources, a mount or an env source)"),
		},
		{
			Name: ruleCopyResources,
			Expression: fmt.Sprintf(`variables.all.all(c, !has(c.resources) ||
					(c.resources.?limits.orValue({}).all(n, %[1]s) && c.resources.?requests.orValue({}).all(n, %[1]s))) &&
				(!has(dyn(object.spec).resources) ||
					(dyn(object.spec).resources.?limits.orValue({}).all(n, %[1]s) && dyn(object.spec).resources.?requests.orValue({}).all(n, %[1]s)))`,
				nodeResourceExpr("n")),
			Message: fmt.Sprintf("[%s] a copy asks only for %s and hugepages-*: any other resource (an extended resource such as "+
				"nvidia.com/gpu) is a device plugin handing the container the node's devices.", ruleCopyResources, strings.Join(nodeResources, ", ")),
		},
		{
			// The kubelet ends the copy at its deadline (activeDeadlineSeconds),
			// whether or not the sweeper is there to delete it; a restart
			// policy other than Never, a long grace period, a finalizer or
			// an owner could keep it, or something of it, past its session.
			Name: ruleCopyLifetime,
			Expression: fmt.Sprintf(`object.spec.?restartPolicy.orValue('Always') == 'Never' &&
				object.spec.?terminationGracePeriodSeconds.orValue(30) <= %[1]d &&
				object.spec.?activeDeadlineSeconds.orValue(0) > 0 &&
				duration(string(object.spec.activeDeadlineSeconds) + 's') <= duration(%[2]s) &&
				size(object.metadata.?finalizers.orValue([])) == 0 &&
				size(object.metadata.?ownerReferences.orValue([])) == 0`, MaxCopyGracePeriod, GrantTTLMaxSetting.Ref()),
			MessageExpression: fmt.Sprintf(`'[%s] a copy runs once (restartPolicy: Never), stops within %d seconds, ends by its ' +
				'activeDeadlineSeconds no later than the longest grant (' + %s + '), and has no finalizer or owner: ' +
				'the node itself ends it when its grant does.'`, ruleCopyLifetime, MaxCopyGracePeriod, GrantTTLMaxSetting.Ref()),
		},
	}
}

// MaxCopyGracePeriod is the longest a copy may take to stop, in seconds
// (the API server's default).
const MaxCopyGracePeriod = 30

// nodeResources are the resources a copy's containers may ask for, beside
// huge pages: the node's own, which no device plugin hands out.
var nodeResources = []string{string(corev1.ResourceCPU), string(corev1.ResourceMemory), string(corev1.ResourceEphemeralStorage)}

func nodeResourceExpr(n string) string {
	return fmt.Sprintf(`(%s in %s || %s.startsWith(%s))`, n, celList(nodeResources), n, q(corev1.ResourceHugePagesPrefix))
}

// IsNodeResource reports whether a copy may ask for resource name.
func IsNodeResource(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || slices.Contains(nodeResources, string(name))
}

// SetsOnlyJudged reports whether obj, an object of schema as the API
// serves it, sets only fields the table lets be set in place: what the
// generated rules check, for the builders to leave out the rest. What
// does not encode as an object sets nothing judged.
func SetsOnlyJudged(schema string, place Place, obj any) bool {
	data, err := json.Marshal(obj)
	if err != nil {
		return false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return false
	}
	judged := judgedFields(schema, place)
	for f := range fields {
		if !slices.Contains(judged, f) {
			return false
		}
	}
	return true
}
