package policies

import "fmt"

// The Pod Security Standards' restricted profile, field by field, for the
// containers the plane admits: each debug container and everything in a
// copy, whatever the namespace itself enforces
// (https://kubernetes.io/docs/concepts/security/pod-security-standards/).
// Each function returns the body of an all(c, ...) over a list of containers
// whose security context is c.securityContext.

// seLinuxTypes are the SELinux types the restricted profile allows.
var seLinuxTypes = []string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}

var seLinuxTypesExpr = celList(seLinuxTypes)

// Each check below judges the container as it will run (effective.go):
// what it sets itself, and what it takes from the pod when it sets nothing.

// restrictedPrivilege: no privileged container, no privilege escalation, the
// default /proc mount, and no Windows options (a host process, or a group
// managed service account: an Active Directory identity), the pod's
// host-process setting included, which reaches every container.
var restrictedPrivilege = `has(c.securityContext) &&
	has(c.securityContext.allowPrivilegeEscalation) && !c.securityContext.allowPrivilegeEscalation &&
	(!has(c.securityContext.privileged) || !c.securityContext.privileged) &&
	(!has(c.securityContext.procMount) || c.securityContext.procMount == 'Default') &&
	!has(c.securityContext.windowsOptions) && !` + podHostProcessExpr

// restrictedCapabilities: every capability dropped, none added (stricter than
// the profile, which allows NET_BIND_SERVICE: nothing the plane runs binds a
// low port).
const restrictedCapabilities = `has(c.securityContext) && has(c.securityContext.capabilities) &&
	has(c.securityContext.capabilities.drop) && 'ALL' in c.securityContext.capabilities.drop &&
	(!has(c.securityContext.capabilities.add) || size(c.securityContext.capabilities.add) == 0)`

// restrictedSeccomp: the runtime's default seccomp profile, the container's
// or the pod's (stricter than the profile, which allows Localhost: a node's
// local profile may allow anything, and the policy cannot read it).
var restrictedSeccomp = effectiveSeccompExpr + ` == 'RuntimeDefault'`

// restrictedConfinement: AppArmor, as the container, its annotation or the
// pod gives it, is the runtime's default (stricter than the profile, as
// seccomp is), and SELinux, the container's or the pod's, only with an
// allowed type and no user or role.
var restrictedConfinement = fmt.Sprintf(`%s in ['', 'RuntimeDefault'] &&
	(%s)`, effectiveAppArmorExpr, effectiveSELinuxOKExpr)

// restrictedNonRoot: runAsNonRoot, the container's or the pod's, and never
// user or group 0 (when the image decides the user, runAsNonRoot makes the
// kubelet refuse root).
var restrictedNonRoot = fmt.Sprintf(`%s.orValue(false) && %s.orValue(-1) != 0 && %s.orValue(-1) != 0`,
	effectiveExpr("runAsNonRoot"), effectiveExpr("runAsUser"), effectiveExpr("runAsGroup"))

// restrictedPodExpr holds the pod-level fields of the restricted profile for
// a pod the plane creates: no host namespace, no sysctl, no root user or
// group, no unconfined or local seccomp or AppArmor default, SELinux only
// of an allowed type, no Windows host process, and the node's default
// runtime (a runtime class names a handler the policy cannot see, which may
// run containers privileged or hand them devices).
var restrictedPodExpr = fmt.Sprintf(`(!has(object.spec.hostNetwork) || !object.spec.hostNetwork) &&
	(!has(object.spec.hostPID) || !object.spec.hostPID) &&
	(!has(object.spec.hostIPC) || !object.spec.hostIPC) &&
	object.spec.?runtimeClassName.orValue('') == '' &&
	(!has(object.spec.securityContext) ||
	 ((!has(object.spec.securityContext.sysctls) || size(object.spec.securityContext.sysctls) == 0) &&
	  (!has(object.spec.securityContext.runAsUser) || object.spec.securityContext.runAsUser != 0) &&
	  (!has(object.spec.securityContext.runAsGroup) || object.spec.securityContext.runAsGroup != 0) &&
	  !(0 in %[2]s) &&
	  (!has(object.spec.securityContext.seccompProfile) || object.spec.securityContext.seccompProfile.type == 'RuntimeDefault') &&
	  (!has(object.spec.securityContext.appArmorProfile) || object.spec.securityContext.appArmorProfile.type == 'RuntimeDefault') &&
	  !has(object.spec.securityContext.windowsOptions) &&
	  (!has(object.spec.securityContext.seLinuxOptions) ||
	   ((!has(object.spec.securityContext.seLinuxOptions.type) || object.spec.securityContext.seLinuxOptions.type in %[1]s) &&
	    !has(object.spec.securityContext.seLinuxOptions.user) && !has(object.spec.securityContext.seLinuxOptions.role))))) &&
	(!has(object.metadata.annotations) ||
	 !object.metadata.annotations.exists(k, k.startsWith('%[3]s') &&
	   object.metadata.annotations[k] != 'runtime/default'))`, seLinuxTypesExpr, podGroupsExpr, AppArmorAnnotationPrefix)

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
			"is not privileged, sets allowPrivilegeEscalation: false, keeps the default /proc mount and sets no Windows options (nor does the pod make it a host process)."),
		rule("capabilities", restrictedCapabilities, "drops ALL capabilities and adds none."),
		rule("seccomp", restrictedSeccomp, "runs with seccompProfile type RuntimeDefault, set in its securityContext or the pod's."),
		rule("confinement", restrictedConfinement,
			"runs with the runtime's default AppArmor profile (its own, its annotation's or the pod's), and SELinux only with a container type and no user or role (its own or the pod's)."),
	}
}
