package sessionobjects

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
)

// DebugSecurityContext is the one security context the policies let a debug
// container have: the debug user and group, non-root, read-only root, no
// privilege escalation, every capability dropped, the runtime's default
// seccomp profile: the restricted Pod Security Standard and more. Each is
// set on the container itself, so no pod's setting reaches it (the group
// too: a user without one runs in group 0).
func DebugSecurityContext() *corev1.SecurityContext {
	sc := RestrictedSecurityContext(v1alpha1.DebugUserID)
	sc.RunAsGroup = ptr.To(v1alpha1.DebugUserID)
	sc.ReadOnlyRootFilesystem = ptr.To(true)
	return sc
}

// ConfinedIn sets on sc what pod would otherwise hand a debug container
// that the policies refuse: SELinux options with another type, a user or a
// role are replaced by the container type at the pod's level (so the
// container still reads the pod's volumes), and an AppArmor profile the
// pod, or an annotation for the container, sets to anything but the
// runtime's default becomes that default. A pod that sets neither changes
// nothing, so a node without SELinux or AppArmor is asked for neither.
func ConfinedIn(sc *corev1.SecurityContext, pod *corev1.Pod, container string) {
	psc := pod.Spec.SecurityContext
	if psc != nil && psc.SELinuxOptions != nil {
		o := psc.SELinuxOptions
		if (o.Type != "" && !policies.AllowedSELinuxType(o.Type)) || o.User != "" || o.Role != "" {
			sc.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_t", Level: o.Level}
		}
	}
	annotated, byAnnotation := pod.Annotations[policies.AppArmorAnnotationPrefix+container]
	podProfile := psc != nil && psc.AppArmorProfile != nil && psc.AppArmorProfile.Type != corev1.AppArmorProfileTypeRuntimeDefault
	if (byAnnotation && annotated != "runtime/default") || (!byAnnotation && podProfile) {
		sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	}
}

// LiveDebuggable says why pod cannot take a debug container the policies
// admit, whatever the container sets: what the pod gives every container
// (the node's namespaces, group 0) cannot be taken back by one. A copy
// leaves those out.
func LiveDebuggable(pod *corev1.Pod) error {
	s := pod.Spec
	if s.NodeName == "" {
		return fmt.Errorf("pod %s is not bound to a node yet: pick a running pod", pod.Name)
	}
	if s.HostNetwork || s.HostPID || s.HostIPC {
		return fmt.Errorf("pod %s shares the node's network, PID or IPC namespace, and a debug container in it would too: use a copy", pod.Name)
	}
	if sc := s.SecurityContext; sc != nil && (ptr.Deref(sc.FSGroup, -1) == 0 || slices.Contains(sc.SupplementalGroups, 0)) {
		return fmt.Errorf("pod %s puts every container in group 0 (fsGroup or supplementalGroups), a debug container too: use a copy", pod.Name)
	}
	if sc := s.SecurityContext; sc != nil && sc.WindowsOptions != nil && ptr.Deref(sc.WindowsOptions.HostProcess, false) {
		return fmt.Errorf("pod %s makes every container a Windows host process: it cannot be debugged", pod.Name)
	}
	return nil
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
