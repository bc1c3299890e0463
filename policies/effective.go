package policies

import (
	"fmt"
	"slices"
)

// What a container runs with is not what its securityContext says: the
// kubelet fills what the container leaves unset from the pod, and some
// settings exist on the pod alone. The policies judge what the container
// will run with, so each effective value is computed here once, in CEL, for
// a container c of the pod object, the way Kubernetes takes it:
//
//   - runAsUser, runAsGroup, runAsNonRoot, seLinuxOptions: the container's
//     if set, else the pod's (securityContextFromPodSecurityContext and
//     DetermineEffectiveSecurityContext in
//     k8s.io/kubernetes/pkg/securitycontext/util.go). seLinuxOptions is taken
//     whole, never merged field by field. With neither, the image decides the
//     user and group (and a user without a group runs in group 0).
//   - windowsOptions: merged field by field, the container's over the pod's
//     (the same function): a pod-level hostProcess reaches every container.
//   - seccompProfile: the container's, else the pod's, else the kubelet's
//     default, Unconfined unless it runs with SeccompDefault
//     (getSeccompProfile in k8s.io/kubernetes/pkg/kubelet/kuberuntime/helpers.go).
//   - appArmorProfile: the container's, else the pod annotation
//     container.apparmor.security.beta.kubernetes.io/<container name>, else the
//     pod's (GetProfile in k8s.io/kubernetes/pkg/security/apparmor/helpers.go);
//     with none, the runtime's default on a node with AppArmor.
//   - supplemental groups: the pod's supplementalGroups and fsGroup, for every
//     container, beside the user's groups in the image's /etc/group unless
//     supplementalGroupsPolicy is Strict, and the GIDs the pod's persistent
//     volumes name (determineEffectiveSecurityContext in
//     k8s.io/kubernetes/pkg/kubelet/kuberuntime/security_context.go). No
//     container can drop them.
//   - the container's alone: privileged, allowPrivilegeEscalation,
//     capabilities, readOnlyRootFilesystem, procMount.
//   - the pod's alone: hostNetwork, hostPID, hostIPC, sysctls,
//     shareProcessNamespace, runtimeClassName, volumes. An ephemeral
//     container joins the pod's namespaces as they are.

// effectiveExpr is the effective value of field of c's securityContext, an
// optional: the container's, else the pod's.
func effectiveExpr(field string) string {
	return fmt.Sprintf(`c.?securityContext.?%[1]s.or(object.spec.?securityContext.?%[1]s)`, field)
}

// AppArmorAnnotationPrefix starts the deprecated per-container annotation
// the kubelet still reads.
const AppArmorAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"

// AllowedSELinuxType reports whether the restricted profile lets a
// container run with SELinux type t.
func AllowedSELinuxType(t string) bool { return slices.Contains(seLinuxTypes, t) }

// effectiveAppArmorExpr is the type of c's effective AppArmor profile
// (RuntimeDefault, Unconfined, Localhost), or ” for none set anywhere.
var effectiveAppArmorExpr = func() string {
	ann := fmt.Sprintf(`object.metadata.?annotations[?('%s' + c.name)]`, AppArmorAnnotationPrefix)
	return fmt.Sprintf(`c.?securityContext.?appArmorProfile.?type.orValue(
	%[1]s.orValue('') == 'runtime/default' ? 'RuntimeDefault' :
	%[1]s.orValue('') == 'unconfined' ? 'Unconfined' :
	%[1]s.orValue('').startsWith('localhost/') ? 'Localhost' :
	object.spec.?securityContext.?appArmorProfile.?type.orValue(''))`, ann)
}()

// effectiveSELinuxOKExpr is true when c's effective SELinux options, if
// any, keep it in a container type with no user or role.
var effectiveSELinuxOKExpr = fmt.Sprintf(`!%[1]s.hasValue() ||
	((!has(%[1]s.value().type) || %[1]s.value().type in %[2]s) &&
	 !has(%[1]s.value().user) && !has(%[1]s.value().role))`, effectiveExpr("seLinuxOptions"), seLinuxTypesExpr)

// effectiveSeccompExpr is the type of c's effective seccomp profile, the
// kubelet's default taken as Unconfined (SeccompDefault is a node's choice
// the policy cannot see).
var effectiveSeccompExpr = effectiveExpr("seccompProfile") + `.?type.orValue('Unconfined')`

// podGroupsExpr are the supplemental groups the pod gives every container.
const podGroupsExpr = `(object.spec.?securityContext.?supplementalGroups.orValue([]) +
	(object.spec.?securityContext.?fsGroup.hasValue() ? [object.spec.securityContext.fsGroup] : []))`

// podHostProcessExpr is true when the pod makes every container a Windows
// host process.
const podHostProcessExpr = `object.spec.?securityContext.?windowsOptions.?hostProcess.orValue(false)`
