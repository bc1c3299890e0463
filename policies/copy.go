package policies

import (
	"fmt"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// A copy pod is checked as a whole: an admission policy cannot see the pod
// it copies, so what it admits must be harmless even if a stolen portal
// token made it up. It holds no credential, touches nothing of the node,
// runs nothing privileged or as root, has no init container and runs only
// images pinned by digest; the copy builder (manifests/sessionobjects/copy.go)
// produces exactly such pods.

// copyVolumesExpr admits only volumes whose source the table lets a copy
// have (fieldtable.go: emptyDir, configMap, downwardAPI, a projection of
// those, a PersistentVolumeClaim mounted read-only, since a copy never
// writes the app's data, and the hold volume: a pinned debug image, which
// holds the app's containers of a held copy). A source Kubernetes adds
// later is refused until it is judged. Image volumes came in 1.31: dyn()
// reaches the field without a type-checking warning on 1.30, whose API
// server drops it, so that a hold volume there has no source and is
// refused.
var copyVolumesExpr = fmt.Sprintf(`%s.all(v, %s &&
	(!has(v.persistentVolumeClaim) || v.persistentVolumeClaim.?readOnly.orValue(false)) &&
	(!has(dyn(v).image) || (v.name == '%s' && dyn(v).image.?reference.orValue('') in %s)) &&
	(!has(v.projected) || %s.all(s, %s)))`,
	listOf("object.spec.volumes"), fieldsJudgedExpr("v", "Volume", InCopy), v1alpha1.HoldVolume, DebugImagesSetting.Ref(),
	listOf("v.projected.sources"), fieldsJudgedExpr("s", "VolumeProjection", InCopy))

// CopyPodGuard checks the pods the plane creates: only the
// portal creates pods, each a copy for one Session, labelled for it and
// nothing else (so no Service sends it traffic), with a debug container.
// Its session label brings it under CopyPodShape.
func CopyPodGuard() Policy {
	session := q(v1alpha1.SessionLabel)
	return Policy{
		Name:     "breakglass-copy-pod-guard",
		Summary:  "Pods the plane creates: only the portal's copies, session-labelled, behind no Service.",
		Profiles: Profiles,
		Rules:    []Rule{podCreates},
		// A pod create by anyone else is not this policy's business.
		MatchConditions: []Condition{planeUserCondition},
		Variables: []Variable{
			{Name: "labels", Expression: `has(object.metadata.labels) ? object.metadata.labels : {}`},
		},
		Validations: []Validation{
			{
				Name:       "copy.portal-only",
				Expression: isPortalPodExpr,
				Message:    "[copy.portal-only] of the plane's accounts only the portal creates pods, and only copies for a session.",
			},
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
				Name: "copy.process-access",
				Expression: fmt.Sprintf(`!has(object.spec.shareProcessNamespace) || !object.spec.shareProcessNamespace ||
					%s`, processAccessAllowedExpr),
				Message: fmt.Sprintf("[copy.process-access] shareProcessNamespace needs a session approved with process access (%s in this namespace).",
					v1alpha1.DebugProcessRole),
			},
		},
	}
}

// CopyPodShape holds every session-labelled pod, whoever creates it, to
// what a copy may be: its debug containers to the debug shape, and the whole
// pod to the restricted Pod Security Standard with no credential, no node
// access and no image but pinned ones.
func CopyPodShape() Policy {
	validations := debugShape("copy", "debug")
	validations = append(validations, copyFields()...)
	validations = append(validations, restricted("copy.app", "app", "every container of a copy")...)
	validations = append(validations,
		Validation{
			Name:       "copy.app.non-root",
			Expression: `variables.app.all(c, ` + restrictedNonRoot + `)`,
			Message:    "[copy.app.non-root] every container of a copy runs with runAsNonRoot: true (its own or the pod's), never as user or group 0.",
		},
		Validation{
			Name:       "copy.pod-security",
			Expression: restrictedPodExpr,
			Message: "[copy.pod-security] a copy shares no host namespace (hostNetwork, hostPID, hostIPC), sets no sysctl, never runs as user or " +
				"group 0 (fsGroup and supplementalGroups included), keeps the runtime's default seccomp and AppArmor profiles and SELinux confined, " +
				"and runs in the node's default runtime (no runtimeClassName).",
		},
		Validation{
			Name:       "copy.no-init-containers",
			Expression: `!has(object.spec.initContainers) || size(object.spec.initContainers) == 0`,
			Message:    "[copy.no-init-containers] a copy has no init containers: they would run the app's set-up (migrations, credentials) a second time.",
		},
		Validation{
			Name:       "copy.images",
			Expression: fmt.Sprintf(`variables.app.all(c, has(c.image) && c.image.matches('%s'))`, digestPattern),
			Message:    "[copy.images] every image in a copy is pinned by digest (repository@sha256:...), as the copied pod ran it.",
		},
		Validation{
			Name: "copy.credentials",
			Expression: `has(object.spec.automountServiceAccountToken) && !object.spec.automountServiceAccountToken &&
				(!has(object.spec.serviceAccountName) || object.spec.serviceAccountName in ['', 'default'])`,
			Message: "[copy.credentials] a copy runs as the namespace's default ServiceAccount with automountServiceAccountToken: false: " +
				"no API token and no cloud identity bound to the app's ServiceAccount.",
		},
		Validation{
			Name:       "copy.volumes",
			Expression: copyVolumesExpr,
			Message: "[copy.volumes] a copy mounts only emptyDir, configMap, downwardAPI (or projections of those), read-only " +
				"persistentVolumeClaim volumes and the hold volume (a pinned debug image): no secret, token, CSI, hostPath or other node volume, " +
				"nor a volume source this plane has not judged.",
		},
		Validation{
			Name: ruleCopyEnv,
			Expression: `variables.all.all(c, !has(c.env) || c.env.all(e, !` + deviceEnvExpr + `)) &&
				variables.all.all(c, !has(c.envFrom) || c.envFrom.all(f, !(` + devicePrefixExpr + `))) &&
				variables.all.all(c, !has(c.volumeMounts) || c.volumeMounts.all(m, !` + deviceMountExpr + `))`,
			Message: fmt.Sprintf("[%s] no container of a copy sets a variable, names an envFrom prefix that would make one, or mounts a "+
				"path, that a container runtime's device hook reads as a request for the node's devices (docs/policies.md, \"Device requests\").", ruleCopyEnv),
		},
		Validation{
			Name:       "copy.app.host-ports",
			Expression: `variables.all.all(c, !has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))`,
			Message:    "[copy.app.host-ports] no container of a copy binds a host port.",
		},
		Validation{
			Name: "copy.placement",
			Expression: `object.spec.?nodeName.orValue('') != '' &&
				(!has(object.spec.tolerations) || object.spec.tolerations.all(t, has(t.key) && t.key != '')) &&
				(!has(object.spec.priorityClassName) || !object.spec.priorityClassName.startsWith('system-')) &&
				(!has(object.spec.os) || object.spec.os.name == 'linux')`,
			// A copy is bound to its node by name, so the scheduler never
			// pre-empts for it; on the node only system- (critical) pods make
			// the kubelet evict others. Any other class may be the cluster's
			// default, which the priority admission plugin sets on every pod.
			Message: "[copy.placement] a copy names the node it runs on (as the pod it copies does: no scheduler or binding places it), neither tolerates every taint nor takes a system- priority class (it never displaces the node's own workloads), and runs on Linux.",
		},
		Validation{
			Name: "copy.devices",
			Expression: `(!has(object.spec.resourceClaims) || size(object.spec.resourceClaims) == 0) &&
				variables.all.all(c, !has(c.resources) || !has(c.resources.claims) || size(c.resources.claims) == 0)`,
			Message: "[copy.devices] a copy claims no device (resourceClaims): a device's driver can hand a container the node's devices and paths.",
		},
		Validation{
			Name:       "copy.hooks",
			Expression: `variables.all.all(c, !has(c.livenessProbe) && !has(c.readinessProbe) && !has(c.startupProbe) && !has(c.lifecycle))`,
			Message:    "[copy.hooks] no container of a copy has a probe or a lifecycle hook: the kubelet runs them from the node, with the node's network.",
		},
		Validation{
			Name:       "copy.annotations",
			Expression: `!has(object.metadata.annotations) || object.metadata.annotations.all(k, k.startsWith('breakglass.tower.dev/'))`,
			Message: "[copy.annotations] a copy carries only breakglass.tower.dev/ annotations: others can give it a cloud role (kube2iam, kiam), " +
				"another network or address (Multus, Calico) or loosen its confinement.",
		},
	)
	return Policy{
		Name:        "breakglass-copy-pod-shape",
		Summary:     "Copy pods: restricted, no credentials, no node access, pinned images; debug containers in the debug shape.",
		Profiles:    Profiles,
		Settings:    []Setting{DebugImagesSetting, DebugUserIDSetting, GrantTTLMaxSetting},
		SelectLabel: v1alpha1.SessionLabel,
		Rules:       []Rule{podCreates},
		Variables: []Variable{
			{Name: "all", Expression: `object.spec.containers +
				(has(object.spec.initContainers) ? object.spec.initContainers : [])`},
			{Name: "debug", Expression: fmt.Sprintf(`variables.all.filter(c, c.name.startsWith('%s'))`, v1alpha1.DebugContainerPrefix)},
			{Name: "app", Expression: fmt.Sprintf(`variables.all.filter(c, !c.name.startsWith('%s'))`, v1alpha1.DebugContainerPrefix)},
			{Name: "mountableVolumes", Expression: mountableVolumesExpr},
		},
		Validations: validations,
	}
}

// podStatusControllers are the cluster's controllers that write a pod's
// status (conditions such as DisruptionTarget) when its node goes away or
// it is evicted or collected: kube-controller-manager in its own name, or
// as each controller's account (--use-service-account-credentials).
var podStatusControllers = []string{"system:kube-controller-manager",
	"system:serviceaccount:kube-system:node-controller", "system:serviceaccount:kube-system:pod-garbage-collector",
	"system:serviceaccount:kube-system:disruption-controller", "system:serviceaccount:kube-system:taint-eviction-controller"}

// CopyPodUpdates keeps every session-labelled pod (a copy) what the plane
// admitted until it is deleted: CopyPodShape checks a copy when it is
// created, and an update could otherwise change what it runs (container
// images are mutable), give it the app's labels (and so the app's traffic),
// annotations (a cloud role, another network) or owners, resize it, or
// rewrite its status. Its binding selects the old object or the new, so
// dropping the session label is seen too. The kubelet of the copy's node
// (and the cluster's own controllers, in kube-system) write its status;
// new debug containers are DebugContainer's; a binding to a node is moot
// (a copy names its node).
func CopyPodUpdates() Policy {
	return Policy{
		Name:        "breakglass-copy-pod-updates",
		Summary:     "Copy pods stay as admitted: no spec, label, annotation or owner change, no resize, status only from their node.",
		Profiles:    Profiles,
		SelectLabel: v1alpha1.SessionLabel,
		Rules: []Rule{{
			APIGroups: []string{""}, APIVersions: []string{"v1"},
			Resources: []string{"pods", "pods/status", "pods/resize"}, Operations: []Operation{Update},
		}},
		Variables: []Variable{
			// An update of the pod itself has no subresource, which CEL then lacks.
			{Name: "sub", Expression: `request.?subResource.orValue('')`},
		},
		Validations: []Validation{
			{
				// The status and other subresources reset the spec but
				// take the metadata as written: it is compared for all.
				Name: "copy.unchanged",
				Expression: `(variables.sub != '' || object.spec == oldObject.spec) &&
					object.metadata.?labels == oldObject.metadata.?labels &&
					object.metadata.?annotations == oldObject.metadata.?annotations &&
					object.metadata.?ownerReferences == oldObject.metadata.?ownerReferences &&
					object.metadata.?finalizers == oldObject.metadata.?finalizers`,
				Message: "[copy.unchanged] a copy pod stays as it was admitted: its containers, images, labels, annotations, owners and finalizers never change. " +
					"End the session and start another.",
			},
			{
				Name:       "copy.no-resize",
				Expression: `variables.sub != 'resize'`,
				Message:    "[copy.no-resize] a copy pod is not resized: it runs with the resources it was admitted with.",
			},
			{
				Name: "copy.status-by-its-node",
				Expression: fmt.Sprintf(`variables.sub != 'status' ||
					request.userInfo.username == 'system:node:' + oldObject.spec.?nodeName.orValue('') ||
					request.userInfo.username in %s`, celList(podStatusControllers)),
				Message: "[copy.status-by-its-node] a copy pod's status is written by the kubelet of its node (and the cluster's controllers): " +
					"what it reports about the copy is the plane's to read, nobody's to write.",
			},
		},
	}
}

// ReservedNames keeps the debug containers' name prefix to the plane: a pod
// that is not a session's copy has no container named breakglass-, so the
// portal, which attaches only to such containers, can never be pointed at an
// app container that merely took the name. Its match condition leaves
// every other pod alone.
func ReservedNames() Policy {
	prefix := q(v1alpha1.DebugContainerPrefix)
	return Policy{
		Name:     "breakglass-reserved-names",
		Summary:  "The breakglass- container name prefix is kept for debug containers.",
		Profiles: Profiles,
		Rules:    []Rule{podCreates},
		MatchConditions: []Condition{{
			Name: "names-a-container-breakglass",
			Expression: fmt.Sprintf(`(object.spec.containers.exists(c, c.name.startsWith(%[1]s)) ||
				(has(object.spec.initContainers) && object.spec.initContainers.exists(c, c.name.startsWith(%[1]s)))) &&
				!(has(object.metadata.labels) && %[2]s in object.metadata.labels)`, prefix, q(v1alpha1.SessionLabel)),
		}},
		Validations: []Validation{{
			Name:       "names.reserved",
			Expression: `false`,
			Message: fmt.Sprintf("[names.reserved] container names starting with %s are kept for break-glass debug containers: rename the container.",
				v1alpha1.DebugContainerPrefix),
		}},
	}
}
