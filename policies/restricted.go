package policies

import "fmt"

// The Pod Security Standards' restricted profile, field by field, for the
// containers the plane admits: each debug container and everything in a
// copy, whatever the namespace itself enforces
// (https://kubernetes.io/docs/concepts/security/pod-security-standards/).
// Each function returns the body of an all(c, ...) over a list of containers
// whose security context is c.securityContext.

// seLinuxTypesExpr are the SELinux types the restricted profile allows.
const seLinuxTypesExpr = `['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']`

// restrictedPrivilege: no privileged container, no privilege escalation, the
// default /proc mount, and no Windows options (a host process, or a group
// managed service account: an Active Directory identity).
const restrictedPrivilege = `has(c.securityContext) &&
	has(c.securityContext.allowPrivilegeEscalation) && !c.securityContext.allowPrivilegeEscalation &&
	(!has(c.securityContext.privileged) || !c.securityContext.privileged) &&
	(!has(c.securityContext.procMount) || c.securityContext.procMount == 'Default') &&
	!has(c.securityContext.windowsOptions)`

// restrictedCapabilities: every capability dropped, none added (stricter than
// the profile, which allows NET_BIND_SERVICE: nothing the plane runs binds a
// low port).
const restrictedCapabilities = `has(c.securityContext) && has(c.securityContext.capabilities) &&
	has(c.securityContext.capabilities.drop) && 'ALL' in c.securityContext.capabilities.drop &&
	(!has(c.securityContext.capabilities.add) || size(c.securityContext.capabilities.add) == 0)`

// restrictedSeccomp: the runtime's default seccomp profile or a local one,
// set on the container itself (the plane's builders always set it), so a
// target pod's Unconfined default cannot reach a debug container.
const restrictedSeccomp = `has(c.securityContext) && has(c.securityContext.seccompProfile) &&
	c.securityContext.seccompProfile.type in ['RuntimeDefault', 'Localhost']`

// restrictedConfinement: AppArmor not Unconfined, and SELinux only with an
// allowed type and no user or role.
var restrictedConfinement = fmt.Sprintf(`!has(c.securityContext) ||
	((!has(c.securityContext.appArmorProfile) || c.securityContext.appArmorProfile.type != 'Unconfined') &&
	 (!has(c.securityContext.seLinuxOptions) ||
	  ((!has(c.securityContext.seLinuxOptions.type) || c.securityContext.seLinuxOptions.type in %s) &&
	   !has(c.securityContext.seLinuxOptions.user) && !has(c.securityContext.seLinuxOptions.role))))`, seLinuxTypesExpr)

// restrictedNonRoot: runAsNonRoot on the container and never user 0.
const restrictedNonRoot = `has(c.securityContext) && has(c.securityContext.runAsNonRoot) && c.securityContext.runAsNonRoot &&
	(!has(c.securityContext.runAsUser) || c.securityContext.runAsUser != 0)`

// restrictedPodExpr holds the pod-level fields of the restricted profile for
// a pod the plane creates: no host namespace, no sysctl, no root, no
// unconfined seccomp, AppArmor or SELinux, no Windows host process.
var restrictedPodExpr = fmt.Sprintf(`(!has(object.spec.hostNetwork) || !object.spec.hostNetwork) &&
	(!has(object.spec.hostPID) || !object.spec.hostPID) &&
	(!has(object.spec.hostIPC) || !object.spec.hostIPC) &&
	(!has(object.spec.securityContext) ||
	 ((!has(object.spec.securityContext.sysctls) || size(object.spec.securityContext.sysctls) == 0) &&
	  (!has(object.spec.securityContext.runAsUser) || object.spec.securityContext.runAsUser != 0) &&
	  (!has(object.spec.securityContext.seccompProfile) || object.spec.securityContext.seccompProfile.type != 'Unconfined') &&
	  (!has(object.spec.securityContext.appArmorProfile) || object.spec.securityContext.appArmorProfile.type != 'Unconfined') &&
	  !has(object.spec.securityContext.windowsOptions) &&
	  (!has(object.spec.securityContext.seLinuxOptions) ||
	   ((!has(object.spec.securityContext.seLinuxOptions.type) || object.spec.securityContext.seLinuxOptions.type in %s) &&
	    !has(object.spec.securityContext.seLinuxOptions.user) && !has(object.spec.securityContext.seLinuxOptions.role))))) &&
	(!has(object.metadata.annotations) ||
	 !object.metadata.annotations.exists(k, k.startsWith('container.apparmor.security.beta.kubernetes.io/') &&
	   object.metadata.annotations[k] == 'unconfined'))`, seLinuxTypesExpr)

// restricted returns the container-level restricted checks for the list
// variable named list, each rule named prefix + "." + what it checks.
func restricted(prefix, list, who string) []Validation {
	all := func(body string) string { return fmt.Sprintf("variables.%s.all(c, %s)", list, body) }
	rule := func(name, body, msg string) Validation {
		return Validation{Name: prefix + "." + name, Expression: all(body),
			Message: fmt.Sprintf("[%s.%s] %s %s", prefix, name, who, msg)}
	}
	return []Validation{
		rule("privilege", restrictedPrivilege,
			"is not privileged, sets allowPrivilegeEscalation: false, keeps the default /proc mount and sets no Windows options."),
		rule("capabilities", restrictedCapabilities, "drops ALL capabilities and adds none."),
		rule("seccomp", restrictedSeccomp, "sets seccompProfile type RuntimeDefault (or Localhost) in its securityContext."),
		rule("confinement", restrictedConfinement,
			"is not AppArmor Unconfined, and uses SELinux only with a container type and no user or role."),
	}
}
