package vap_test

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
)

// The property tests' own account of what a container runs with, written in
// Go from the kubelet's code and not from the policies' CEL, so that the
// two can disagree: k8s.io/kubernetes/pkg/securitycontext/util.go
// (DetermineEffectiveSecurityContext), pkg/kubelet/kuberuntime/helpers.go
// (getSeccompProfile), pkg/security/apparmor/helpers.go (GetProfile) and
// pkg/kubelet/kuberuntime/security_context.go (the pod's groups).

// effectiveSecurity is c's security context as the kubelet runs it in pod.
func effectiveSecurity(pod *corev1.Pod, c corev1.Container) corev1.SecurityContext {
	var eff corev1.SecurityContext
	if psc := pod.Spec.SecurityContext; psc != nil {
		eff.SELinuxOptions, eff.RunAsUser, eff.RunAsGroup, eff.RunAsNonRoot = psc.SELinuxOptions, psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
		if psc.WindowsOptions != nil {
			eff.WindowsOptions = psc.WindowsOptions.DeepCopy()
		}
		eff.SeccompProfile = psc.SeccompProfile
		eff.AppArmorProfile = psc.AppArmorProfile
	}
	if v, ok := pod.Annotations[policies.AppArmorAnnotationPrefix+c.Name]; ok {
		switch {
		case v == "runtime/default":
			eff.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
		case v == "unconfined":
			eff.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		case strings.HasPrefix(v, "localhost/"):
			eff.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost}
		}
	}
	sc := c.SecurityContext
	if sc == nil {
		return eff
	}
	if sc.SELinuxOptions != nil {
		eff.SELinuxOptions = sc.SELinuxOptions // whole, never merged
	}
	if w := sc.WindowsOptions; w != nil {
		if eff.WindowsOptions == nil {
			eff.WindowsOptions = &corev1.WindowsSecurityContextOptions{}
		}
		if w.HostProcess != nil {
			eff.WindowsOptions.HostProcess = w.HostProcess
		}
	}
	for _, f := range []struct{ from, to **int64 }{{&sc.RunAsUser, &eff.RunAsUser}, {&sc.RunAsGroup, &eff.RunAsGroup}} {
		if *f.from != nil {
			*f.to = *f.from
		}
	}
	for _, f := range []struct{ from, to **bool }{{&sc.RunAsNonRoot, &eff.RunAsNonRoot}, {&sc.Privileged, &eff.Privileged},
		{&sc.AllowPrivilegeEscalation, &eff.AllowPrivilegeEscalation}, {&sc.ReadOnlyRootFilesystem, &eff.ReadOnlyRootFilesystem}} {
		if *f.from != nil {
			*f.to = *f.from
		}
	}
	if sc.Capabilities != nil {
		eff.Capabilities = sc.Capabilities
	}
	if sc.ProcMount != nil {
		eff.ProcMount = sc.ProcMount
	}
	if sc.SeccompProfile != nil {
		eff.SeccompProfile = sc.SeccompProfile
	}
	if sc.AppArmorProfile != nil {
		eff.AppArmorProfile = sc.AppArmorProfile
	}
	return eff
}

// podGroups are the groups the pod puts every container in.
func podGroups(pod *corev1.Pod) []int64 {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return nil
	}
	groups := slices.Clone(psc.SupplementalGroups)
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	return groups
}

// notRestricted says what c would run with that the restricted profile, or
// for a debug container the debug user, does not allow; "" when nothing.
func notRestricted(pod *corev1.Pod, c corev1.Container, debug bool) string {
	eff := effectiveSecurity(pod, c)
	s := pod.Spec
	switch {
	case s.HostNetwork || s.HostPID || s.HostIPC:
		return "the node's namespaces"
	case slices.Contains(podGroups(pod), 0):
		return "group 0 among its groups"
	case ptr.Deref(eff.Privileged, false) || ptr.Deref(eff.AllowPrivilegeEscalation, true):
		return "privilege, or its escalation"
	case eff.Capabilities == nil || !slices.Contains(eff.Capabilities.Drop, "ALL") || len(eff.Capabilities.Add) > 0:
		return "capabilities"
	case eff.ProcMount != nil && *eff.ProcMount != corev1.DefaultProcMount:
		return "an unmasked /proc"
	case eff.WindowsOptions != nil && ptr.Deref(eff.WindowsOptions.HostProcess, false):
		return "a Windows host process"
	case eff.SeccompProfile == nil || eff.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		return fmt.Sprintf("seccomp %v", eff.SeccompProfile)
	case eff.AppArmorProfile != nil && eff.AppArmorProfile.Type != corev1.AppArmorProfileTypeRuntimeDefault:
		return "AppArmor " + string(eff.AppArmorProfile.Type)
	case eff.SELinuxOptions != nil && (!policies.AllowedSELinuxType(eff.SELinuxOptions.Type) || eff.SELinuxOptions.User != "" || eff.SELinuxOptions.Role != ""):
		return fmt.Sprintf("SELinux %+v", *eff.SELinuxOptions)
	case !ptr.Deref(eff.RunAsNonRoot, false) || ptr.Deref(eff.RunAsUser, -1) == 0:
		return "root, or no runAsNonRoot"
	case slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return policies.IsDeviceEnv(e.Name) }):
		return "a request for the node's devices in its environment"
	}
	if !debug {
		return ""
	}
	switch {
	case ptr.Deref(eff.RunAsUser, -1) != v1alpha1.DebugUserID || ptr.Deref(eff.RunAsGroup, -1) != v1alpha1.DebugUserID:
		return fmt.Sprintf("user %v and group %v, not the debug user", ptr.Deref(eff.RunAsUser, -1), ptr.Deref(eff.RunAsGroup, -1))
	case !ptr.Deref(eff.ReadOnlyRootFilesystem, false):
		return "a writable root"
	}
	return ""
}
