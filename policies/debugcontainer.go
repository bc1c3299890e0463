package policies

import (
	"fmt"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// sensitiveVolumesExpr names the pod's volumes that hold secrets or a
// ServiceAccount token: a debug container never mounts them.
const sensitiveVolumesExpr = `has(object.spec.volumes) ? object.spec.volumes.filter(v,
	has(v.secret) || has(v.csi) ||
	(has(v.projected) && has(v.projected.sources) &&
	 v.projected.sources.exists(s, has(s.serviceAccountToken) || has(s.secret) || has(s.clusterTrustBundle)))
).map(v, v.name) : []`

// debugShape returns the validations every debug container passes, applied
// to the containers in the list variable named list. The rule names start
// with prefix ("debug" or "copy") so a denial says which policy spoke.
func debugShape(prefix, list string) []Validation {
	all := func(body string) string { return fmt.Sprintf("variables.%s.all(c, %s)", list, body) }
	sc := "c.securityContext"
	return []Validation{
		{
			Name:       prefix + ".image-digest",
			Expression: all(fmt.Sprintf("has(c.image) && c.image.matches('%s')", digestPattern)),
			Message:    fmt.Sprintf("[%s.image-digest] a debug image is pinned by digest (repository@sha256:...): a tag can move.", prefix),
		},
		{
			Name:       prefix + ".image-allowed",
			Expression: all("c.image in params.spec.debugImages"),
			Message:    fmt.Sprintf("[%s.image-allowed] the debug image is not in the allowlist (PolicyParams default, spec.debugImages): use an approved debug image.", prefix),
		},
		{
			Name: prefix + ".user",
			Expression: all(fmt.Sprintf(`has(%[1]s) && has(%[1]s.runAsUser) && %[1]s.runAsUser == params.spec.debugUserID &&
				has(%[1]s.runAsNonRoot) && %[1]s.runAsNonRoot`, sc)),
			MessageExpression: fmt.Sprintf(`'[%s.user] a debug container runs as user ' + string(params.spec.debugUserID) +
				' with runAsNonRoot: true in its securityContext.'`, prefix),
		},
		{
			Name:       prefix + ".read-only-root",
			Expression: all(fmt.Sprintf(`has(%[1]s) && has(%[1]s.readOnlyRootFilesystem) && %[1]s.readOnlyRootFilesystem`, sc)),
			Message:    fmt.Sprintf("[%s.read-only-root] a debug container sets readOnlyRootFilesystem: true.", prefix),
		},
		{
			Name: prefix + ".privilege",
			Expression: all(fmt.Sprintf(`has(%[1]s) && has(%[1]s.allowPrivilegeEscalation) && !%[1]s.allowPrivilegeEscalation &&
				(!has(%[1]s.privileged) || !%[1]s.privileged) &&
				(!has(%[1]s.procMount) || %[1]s.procMount == 'Default')`, sc)),
			Message: fmt.Sprintf("[%s.privilege] a debug container is not privileged and sets allowPrivilegeEscalation: false.", prefix),
		},
		{
			Name: prefix + ".capabilities",
			Expression: all(fmt.Sprintf(`has(%[1]s) && has(%[1]s.capabilities) &&
				has(%[1]s.capabilities.drop) && 'ALL' in %[1]s.capabilities.drop &&
				(!has(%[1]s.capabilities.add) || size(%[1]s.capabilities.add) == 0)`, sc)),
			Message: fmt.Sprintf("[%s.capabilities] a debug container drops ALL capabilities and adds none.", prefix),
		},
		{
			Name: prefix + ".mounts",
			Expression: all(`(!has(c.volumeMounts) || c.volumeMounts.all(m, has(m.readOnly) && m.readOnly)) &&
				(!has(c.volumeDevices) || size(c.volumeDevices) == 0)`),
			Message: fmt.Sprintf("[%s.mounts] every volume a debug container mounts is mounted readOnly: true, and it uses no volume devices.", prefix),
		},
		{
			Name:       prefix + ".secrets",
			Expression: all(`!has(c.volumeMounts) || c.volumeMounts.all(m, !(m.name in variables.sensitiveVolumes))`),
			Message:    fmt.Sprintf("[%s.secrets] a debug container mounts no secret, ServiceAccount token or CSI volume.", prefix),
		},
		{
			Name: prefix + ".env",
			Expression: all(`(!has(c.envFrom) || size(c.envFrom) == 0) &&
				(!has(c.env) || c.env.all(e, !has(e.valueFrom) || !has(e.valueFrom.secretKeyRef)))`),
			Message: fmt.Sprintf("[%s.env] a debug container reads no secret through env valueFrom and uses no envFrom.", prefix),
		},
	}
}

// DebugContainer checks the ephemeral containers a request adds to a pod
// (kubectl debug, the portal's live mode): both the PUT and the PATCH of
// pods/ephemeralcontainers arrive here as UPDATE. Containers already in the
// pod are left alone; the API server itself forbids changing them.
func DebugContainer() Policy {
	validations := []Validation{{
		Name:       "debug.portal-only",
		Expression: `size(variables.added) == 0 || request.userInfo.username == variables.portalUser`,
		Message:    "[debug.portal-only] on this cluster only the break-glass portal adds debug containers: request a session in the portal.",
		Profiles:   []Profile{Flight},
	}}
	validations = append(validations, Validation{
		Name:       "debug.name",
		Expression: fmt.Sprintf("variables.added.all(c, c.name.startsWith('%s'))", v1alpha1.DebugContainerPrefix),
		Message: fmt.Sprintf("[debug.name] a debug container's name starts with %q; ordinary debug containers are not allowed here, request a break-glass session.",
			v1alpha1.DebugContainerPrefix),
	})
	validations = append(validations, debugShape("debug", "added")...)
	validations = append(validations, Validation{
		Name: "debug.process-access",
		Expression: fmt.Sprintf(`variables.added.all(c, !has(c.targetContainerName) || c.targetContainerName == '') ||
			%s`, processAccessAllowedExpr),
		Message: fmt.Sprintf("[debug.process-access] targetContainerName (seeing the app's processes) needs a session approved with process access (%s in this namespace).",
			v1alpha1.DebugProcessRole),
	})
	return Policy{
		Name:       "breakglass-debug-container",
		Summary:    "Added ephemeral containers: pinned allowed image, user 65532, read-only, unprivileged, no secrets; process access only with that grant.",
		Profiles:   Profiles,
		UsesParams: true,
		Rules: []Rule{{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"pods/ephemeralcontainers"},
			Operations:  []Operation{Update},
		}},
		Variables: []Variable{
			{Name: "portalUser", Expression: portalUserExpr},
			{Name: "oldNames", Expression: `has(oldObject.spec.ephemeralContainers) ? oldObject.spec.ephemeralContainers.map(c, c.name) : []`},
			{Name: "added", Expression: `has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers.filter(c, !(c.name in variables.oldNames)) : []`},
			{Name: "sensitiveVolumes", Expression: sensitiveVolumesExpr},
		},
		Validations: validations,
	}
}

// CopyPodGuard checks the pods the plane creates for the copy and heldCopy
// modes, with no params: the copy is labelled for its Session and nothing
// else, so no Service sends it traffic; it shares no host namespace, reaches
// the app's processes only with the process grant, and has a debug container.
// Its session label brings it under CopyPodShape.
func CopyPodGuard() Policy {
	session := q(v1alpha1.SessionLabel)
	return Policy{
		Name:     "breakglass-copy-pod-guard",
		Summary:  "Pods the portal creates (copy, heldCopy): session-labelled, behind no Service, no host namespaces.",
		Profiles: Profiles,
		Rules: []Rule{{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"pods"},
			Operations:  []Operation{Create},
		}},
		// A pod create by anyone else is not this policy's business.
		MatchConditions: []Condition{planeUserCondition},
		Variables: []Variable{
			{Name: "labels", Expression: `has(object.metadata.labels) ? object.metadata.labels : {}`},
		},
		Validations: []Validation{
			{
				Name:       "copy.session-label",
				Expression: fmt.Sprintf(`%s in variables.labels && variables.labels[%s] != ''`, session, session),
				Message:    fmt.Sprintf("[copy.session-label] a pod the portal creates carries the label %s naming its Session.", v1alpha1.SessionLabel),
			},
			{
				Name:       "copy.no-app-labels",
				Expression: `variables.labels.all(k, k.startsWith('breakglass.tower.dev/'))`,
				Message:    "[copy.no-app-labels] a copy pod carries only breakglass.tower.dev/ labels, so none of the app's Services route traffic to it.",
			},
			{
				Name:       "copy.has-debug-container",
				Expression: fmt.Sprintf(`object.spec.containers.exists(c, c.name.startsWith('%s'))`, v1alpha1.DebugContainerPrefix),
				Message:    fmt.Sprintf("[copy.has-debug-container] a copy pod has a debug container named %s...", v1alpha1.DebugContainerPrefix),
			},
			{
				Name: "copy.host",
				Expression: `(!has(object.spec.hostNetwork) || !object.spec.hostNetwork) &&
					(!has(object.spec.hostPID) || !object.spec.hostPID) &&
					(!has(object.spec.hostIPC) || !object.spec.hostIPC)`,
				Message: "[copy.host] a copy pod shares no host namespace (hostNetwork, hostPID, hostIPC).",
			},
			{
				Name: "copy.process-access",
				Expression: fmt.Sprintf(`!has(object.spec.shareProcessNamespace) || !object.spec.shareProcessNamespace ||
					%s`, processAccessAllowedExpr),
				Message: fmt.Sprintf("[copy.process-access] shareProcessNamespace needs a session approved with process access (%s in this namespace).",
					v1alpha1.DebugProcessRole),
			},
		},
	}
}

// CopyPodShape holds the debug containers of session-labelled pods to the
// debug shape, against the params.
func CopyPodShape() Policy {
	return Policy{
		Name:        "breakglass-copy-pod-shape",
		Summary:     "The debug containers of copy pods: pinned allowed image, user 65532, read-only, unprivileged, no secrets.",
		Profiles:    Profiles,
		UsesParams:  true,
		SelectLabel: v1alpha1.SessionLabel,
		Rules: []Rule{{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"pods"},
			Operations:  []Operation{Create},
		}},
		Variables: []Variable{
			{Name: "debug", Expression: fmt.Sprintf(`object.spec.containers.filter(c, c.name.startsWith('%[1]s')) +
				(has(object.spec.initContainers) ? object.spec.initContainers.filter(c, c.name.startsWith('%[1]s')) : [])`,
				v1alpha1.DebugContainerPrefix)},
			{Name: "sensitiveVolumes", Expression: sensitiveVolumesExpr},
		},
		Validations: debugShape("copy", "debug"),
	}
}
