package manifests

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// DebugSecurityContext is the one security context the policies let a debug
// container have: the debug user, non-root, read-only root, no privilege
// escalation, every capability dropped, the runtime's default seccomp
// profile: the restricted Pod Security Standard and more.
func DebugSecurityContext() *corev1.SecurityContext {
	sc := RestrictedSecurityContext(v1alpha1.DebugUserID)
	sc.ReadOnlyRootFilesystem = ptr.To(true)
	return sc
}

// RestrictedSecurityContext meets the restricted Pod Security Standard on
// its own, whatever the pod around it sets: a non-root user (uid, or the
// image's own when 0), no privilege escalation, no capability, the
// runtime's default seccomp profile.
func RestrictedSecurityContext(uid int64) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if uid != 0 {
		sc.RunAsUser = ptr.To(uid)
	}
	return sc
}

// DebugContainer is a debug container in the shape the policies allow, with
// a terminal to attach to.
func DebugContainer(name, image string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name:  name,
		Image: image,
		Stdin: true,
		// StdinOnce: the shell's input closes when the relay's attach does,
		// so no debug shell outlives its session's stream, and nobody who
		// attaches later gets a shell to type into.
		StdinOnce:                true,
		TTY:                      true,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext:          DebugSecurityContext(),
	}}
}
