package policies

import (
	"fmt"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// debugShape returns the validations every debug container passes, applied
// to the containers in the list variable named list: the restricted Pod
// Security Standard and more (a pinned, allowed image; the debug user; a
// read-only root; read-only mounts of volumes that hold no secret and
// nothing of the node; no environment). The rule names start with
// prefix ("debug" or "copy") so a denial says which policy spoke.
func debugShape(prefix, list string) []Validation {
	all := func(body string) string { return fmt.Sprintf("variables.%s.all(c, %s)", list, body) }
	sc := "c.securityContext"
	shape := []Validation{
		{
			Name:       prefix + ".image-digest",
			Expression: all(fmt.Sprintf("has(c.image) && c.image.matches('%s')", digestPattern)),
			Message:    fmt.Sprintf("[%s.image-digest] a debug image is pinned by digest (repository@sha256:...): a tag can move.", prefix),
		},
		{
			Name:       prefix + ".image-allowed",
			Expression: all("c.image in " + DebugImagesSetting.Ref()),
			Message:    fmt.Sprintf("[%s.image-allowed] the debug image is not in the allowlist (the chart's params.debugImages): use an approved debug image.", prefix),
		},
		{
			// The user and group as the container will run: its own, else
			// the pod's; and the groups every container of the pod is in.
			Name: prefix + ".user",
			Expression: all(fmt.Sprintf(`%[1]s.orValue(-1) == %[4]s &&
				%[2]s.orValue(-1) == %[4]s && %[3]s.orValue(false)`,
				effectiveExpr("runAsUser"), effectiveExpr("runAsGroup"), effectiveExpr("runAsNonRoot"), DebugUserIDSetting.Ref())),
			MessageExpression: fmt.Sprintf(`'[%s.user] a debug container runs as user and group ' + string(%s) +
				' with runAsNonRoot: true (in its securityContext, or the pod\'s).'`, prefix, DebugUserIDSetting.Ref()),
		},
		{
			Name:       prefix + ".groups",
			Expression: `!(0 in ` + podGroupsExpr + `)`,
			Message: fmt.Sprintf("[%s.groups] the pod puts every container in group 0 (fsGroup or supplementalGroups 0): a debug container "+
				"would run in the root group. Use a copy, which leaves those out.", prefix),
		},
		{
			Name:       prefix + ".read-only-root",
			Expression: all(fmt.Sprintf(`has(%[1]s) && has(%[1]s.readOnlyRootFilesystem) && %[1]s.readOnlyRootFilesystem`, sc)),
			Message:    fmt.Sprintf("[%s.read-only-root] a debug container sets readOnlyRootFilesystem: true.", prefix),
		},
	}
	shape = append(shape, restricted(prefix, list, "a debug container")...)
	return append(shape,
		Validation{
			Name: prefix + ".mounts",
			Expression: all(`(!has(c.volumeMounts) || c.volumeMounts.all(m, has(m.readOnly) && m.readOnly)) &&
				(!has(c.volumeDevices) || size(c.volumeDevices) == 0)`),
			Message: fmt.Sprintf("[%s.mounts] every volume a debug container mounts is mounted readOnly: true, and it uses no volume devices.", prefix),
		},
		Validation{
			Name: prefix + ".mounted-volumes",
			Expression: all(`!has(c.volumeMounts) || c.volumeMounts.all(m, m.name in variables.mountableVolumes && !` +
				deviceMountExpr + `)`),
			Message: fmt.Sprintf("[%s.mounted-volumes] a debug container mounts only configMap and downwardAPI volumes (or projections "+
				"of those): no secret, token, scratch directory (a sidecar may write secrets there), claim, image, CSI, node or network "+
				"volume, nor a path a device hook reads.", prefix),
		},
		Validation{
			// What it runs is the image's own shell, which the relay
			// attaches to and records and which ends with the attach: not a
			// command of its own, running where nobody attaches.
			Name:       prefix + ".attached",
			Expression: all(`!has(c.command) && !has(c.args) && c.?stdin.orValue(false) && c.?stdinOnce.orValue(false) && c.?tty.orValue(false)`),
			Message: fmt.Sprintf("[%s.attached] a debug container runs its image's own shell, with stdin, stdinOnce and tty set, for the "+
				"relay to attach to and record: no command or args of its own.", prefix),
			Profiles: []Profile{Flight},
		},
		Validation{
			Name:       prefix + ".env",
			Expression: all(`(!has(c.env) || size(c.env) == 0) && (!has(c.envFrom) || size(c.envFrom) == 0)`),
			Message: fmt.Sprintf("[%s.env] a debug container has no environment variables (env, envFrom): the relay sets none, and a "+
				"variable can be a device hook's request or a secret's reference.", prefix),
		},
	)
}

// DebugContainer checks the ephemeral containers a request adds to a pod
// (kubectl debug, the portal's live mode): both the PUT and the PATCH of
// pods/ephemeralcontainers arrive here as UPDATE. Containers already in the
// pod are left alone; the API server itself forbids changing them.
func DebugContainer() Policy {
	validations := []Validation{{
		Name:       "debug.portal-only",
		Expression: `size(variables.added) == 0 || ` + isPortalPodExpr,
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
	validations = append(validations, debugFields()...)
	validations = append(validations,
		Validation{
			// An ephemeral container joins the pod's namespaces as they are.
			Name: "debug.host-namespaces",
			Expression: `size(variables.added) == 0 ||
				!(object.spec.?hostNetwork.orValue(false) || object.spec.?hostPID.orValue(false) || object.spec.?hostIPC.orValue(false))`,
			Message: "[debug.host-namespaces] this pod shares the node's network, PID or IPC namespace, and a debug container in it would too: " +
				"use a copy, which runs in namespaces of its own.",
		},
		Validation{
			// A pod the scheduler has not yet bound can still take a
			// binding's annotations, which no pod validation sees.
			Name:       "debug.bound",
			Expression: `size(variables.added) == 0 || object.spec.?nodeName.orValue('') != ''`,
			Message:    "[debug.bound] a debug container goes only into a pod bound to its node: pick a running pod.",
		},
		Validation{
			// A runtime class names a handler the policy cannot see: one
			// may run containers privileged or hand them devices.
			Name: "debug.runtime-class",
			Expression: `size(variables.added) == 0 || object.spec.?runtimeClassName.orValue('') == '' ||
				object.spec.runtimeClassName in ` + RuntimeClassesSetting.Ref(),
			MessageExpression: `'[debug.runtime-class] this pod runs in runtime class ' + object.spec.runtimeClassName +
				', which the chart\'s params.runtimeClasses does not list: a debug container would run in it too.'`,
		},
	)
	validations = append(validations,
		Validation{
			Name:       "debug.process-access",
			Expression: `!variables.processReach || ` + processAccessAllowedExpr,
			Message: fmt.Sprintf("[debug.process-access] this debug container would see the app's processes (targetContainerName, or a pod that shares "+
				"its process namespace): that needs a session approved with process access (%s in this namespace).", v1alpha1.DebugProcessRole),
		},
		Validation{
			Name:       "debug.same-user",
			Expression: `!variables.processReach || !(` + DebugUserIDSetting.Ref() + ` in variables.appUsers)`,
			MessageExpression: `'[debug.same-user] the app runs as user ' + string(` + DebugUserIDSetting.Ref() + `) +
				', the debug user: a debug container that sees its processes as the same user could read its environment, memory and ' +
				'files (secrets and token included) through /proc. Run the app as another user, or set another params.debugUserID in the chart.'`,
		},
	)
	return Policy{
		Name:     "breakglass-debug-container",
		Summary:  "Added ephemeral containers: pinned allowed image, user 65532, read-only, unprivileged, no secrets; process access only with that grant.",
		Profiles: Profiles,
		Settings: []Setting{DebugImagesSetting, DebugUserIDSetting, RuntimeClassesSetting},
		Rules: []Rule{{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"pods/ephemeralcontainers"},
			Operations:  []Operation{Update},
		}},
		Variables: []Variable{
			{Name: "oldNames", Expression: `has(oldObject.spec.ephemeralContainers) ? oldObject.spec.ephemeralContainers.map(c, c.name) : []`},
			{Name: "added", Expression: `has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers.filter(c, !(c.name in variables.oldNames)) : []`},
			{Name: "mountableVolumes", Expression: mountableVolumesExpr},
			// Every way an added container could see or reach the app's processes.
			// (The host's namespaces and paths are refused outright.)
			{Name: "processReach", Expression: `size(variables.added) > 0 && (
				variables.added.exists(c, has(c.targetContainerName) && c.targetContainerName != '') ||
				(has(object.spec.shareProcessNamespace) && object.spec.shareProcessNamespace))`},
			// The user ids the pod's containers declare (pod-wide or their own):
			// app containers, init containers (sidecars among them) and other
			// ephemeral containers already there, whose processes an added one
			// could see. Earlier break-glass debug containers hold nothing of
			// the app's (the same rules kept secrets from them).
			{Name: "appUsers", Expression: fmt.Sprintf(`(has(object.spec.securityContext) && has(object.spec.securityContext.runAsUser) ?
				[object.spec.securityContext.runAsUser] : []) +
				(object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : []))
					.filter(c, !c.name.startsWith('%[1]s') && has(c.securityContext) && has(c.securityContext.runAsUser)).map(c, c.securityContext.runAsUser) +
				(has(oldObject.spec.ephemeralContainers) ? oldObject.spec.ephemeralContainers : [])
					.filter(c, !c.name.startsWith('%[1]s') && has(c.securityContext) && has(c.securityContext.runAsUser)).map(c, c.securityContext.runAsUser)`,
				v1alpha1.DebugContainerPrefix)},
		},
		Validations: validations,
	}
}
