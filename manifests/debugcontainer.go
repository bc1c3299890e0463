package manifests

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// DebugSecurityContext is the one security context the policies let a debug
// container have: the debug user, non-root, read-only root, no privilege
// escalation, every capability dropped.
func DebugSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsUser:                ptr.To(v1alpha1.DebugUserID),
		RunAsNonRoot:             ptr.To(true),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// DebugContainer is a debug container in the shape the policies allow, with
// a terminal to attach to.
func DebugContainer(name, image string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name:                     name,
		Image:                    image,
		Stdin:                    true,
		TTY:                      true,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext:          DebugSecurityContext(),
	}}
}
