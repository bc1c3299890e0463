package policies

import (
	"fmt"
	"strings"
)

// No exec by another name: a pod that is privileged, on the node's
// namespaces or mounting the node's paths (what `kubectl debug node/...`
// makes) reaches every process on its node, those of the pods break-glass
// guards among them, with no exec, attach or port-forward to refuse. On
// Flight, NodeAccess holds every pod created outside the system namespaces
// and the ones the chart names (params.nodeAccessNamespaces, for the
// cluster's node agents) to the baseline Pod Security Standard, whoever
// creates it, cluster admins included. Each value set below is an
// allowlist, as upstream's baseline checks are
// (k8s.io/pod-security-admission/policy, check_*.go, at v0.37): a
// capability, sysctl or SELinux type it does not name is refused.

// BaselineCapabilities are the capabilities a container may add: the
// container runtime's default set (check_capabilities_baseline.go).
var BaselineCapabilities = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

// BaselineSysctls are the namespaced sysctls a pod may set: those isolated
// from the node and other pods (check_sysctls.go, up to 1.37's set; an
// older kubelet refuses to run the newer ones as unsafe all the same).
var BaselineSysctls = []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
	"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"}

// nodeContainersExpr is every container a new pod runs (a pod is created
// with no ephemeral container: those arrive later, and on Flight only the
// portal adds one, held to the debug shape).
var nodeContainersExpr = listOf("object.spec.containers") + " + " + listOf("object.spec.initContainers")

// Each check below is the body of an all(c, ...) over the pod and its
// containers' security contexts, sc: the pod's, then each container's.
var (
	notUnconfinedExpr = `sc.?seccompProfile.?type.orValue('') != 'Unconfined' && sc.?appArmorProfile.?type.orValue('') != 'Unconfined'`
	seLinuxBaseline   = fmt.Sprintf(`sc.?seLinuxOptions.?type.orValue('') in %s &&
		sc.?seLinuxOptions.?user.orValue('') == '' && sc.?seLinuxOptions.?role.orValue('') == ''`, seLinuxTypesExpr)
	noHostProcessExpr = `!sc.?windowsOptions.?hostProcess.orValue(false)`
)

// noProbeHostExpr: no probe or lifecycle handler of container c names a
// host. The kubelet runs them from the node, on the node's network, so a
// host of its choosing is a request from the node to anywhere
// (check_hostProbesAndhostLifecycle.go).
var noProbeHostExpr = func() string {
	var parts []string
	for _, handler := range []string{"livenessProbe", "readinessProbe", "startupProbe", "lifecycle.?postStart", "lifecycle.?preStop"} {
		for _, action := range []string{"httpGet", "tcpSocket"} {
			parts = append(parts, fmt.Sprintf(`c.?%s.?%s.?host.orValue('') == ''`, handler, action))
		}
	}
	return strings.Join(parts, " && ")
}()

// NodeAccess is the Flight policy that no pod reaches its node in the
// namespaces break-glass serves.
func NodeAccess() Policy {
	scs := `[object.spec.?securityContext.orValue({})] + variables.containers.map(c, c.?securityContext.orValue({}))`
	return Policy{
		Name: "breakglass-node-access",
		Summary: "On production, no pod outside the system namespaces reaches its node: the baseline Pod Security Standard, " +
			"for everyone.",
		Profiles:        []Profile{Flight},
		Settings:        []Setting{NodeAccessNamespacesSetting},
		Rules:           []Rule{podCreates},
		MatchConditions: []Condition{{Name: "outside-the-system-namespaces", Expression: fmt.Sprintf(`!(request.namespace in %s)`, systemNamespacesExpr)}},
		Variables: []Variable{
			{Name: "exempt", Expression: fmt.Sprintf(`request.namespace in %s`, NodeAccessNamespacesSetting.Ref())},
			{Name: "containers", Expression: nodeContainersExpr},
			{Name: "securityContexts", Expression: scs},
		},
		Validations: []Validation{
			nodeRule("node.host-namespaces", `!object.spec.?hostNetwork.orValue(false) && !object.spec.?hostPID.orValue(false) &&
				!object.spec.?hostIPC.orValue(false)`,
				"no pod shares the node's network, PID or IPC namespace"),
			// Upstream admits an unmasked /proc in a user namespace of the
			// pod's own from 1.35 (check_procMount_baseline.go); the
			// versions before refuse it, and so does this, on all.
			nodeRule("node.privileged", `variables.containers.all(c, !c.?securityContext.?privileged.orValue(false) &&
				c.?securityContext.?procMount.orValue('Default') == 'Default')`,
				"no container is privileged or unmasks /proc"),
			nodeRule("node.capabilities", fmt.Sprintf(`variables.containers.all(c, %s.all(a, a in %s))`,
				"c.?securityContext.?capabilities.?add.orValue([])", celList(BaselineCapabilities)),
				"a container adds only capabilities of the runtime's default set ("+strings.Join(BaselineCapabilities, ", ")+")"),
			nodeRule("node.host-path", listOf("object.spec.volumes")+`.all(v, !has(v.hostPath))`,
				"no pod mounts a path of its node (hostPath)"),
			nodeRule("node.host-ports", `variables.containers.all(c, `+listOf("c.ports")+`.all(p, p.?hostPort.orValue(0) == 0))`,
				"no container takes a port of its node (hostPort)"),
			nodeRule("node.probe-hosts", `variables.containers.all(c, `+noProbeHostExpr+`)`,
				"no probe or lifecycle hook names a host: the node itself would send it there"),
			nodeRule("node.host-process", `variables.securityContexts.all(sc, `+noHostProcessExpr+`)`,
				"no Windows container runs as a host process"),
			nodeRule("node.confinement", fmt.Sprintf(`variables.securityContexts.all(sc, %s && %s) &&
				object.metadata.?annotations.orValue({}).all(k, !k.startsWith('%s') ||
				  object.metadata.annotations[k] == 'runtime/default' || object.metadata.annotations[k].startsWith('localhost/'))`,
				notUnconfinedExpr, seLinuxBaseline, AppArmorAnnotationPrefix),
				"no seccomp or AppArmor profile is Unconfined, and SELinux sets no user or role and a type only of "+
					strings.Join(seLinuxTypes[1:], ", ")),
			nodeRule("node.sysctls", fmt.Sprintf(`%s.all(s, s.name in %s)`, "object.spec.?securityContext.?sysctls.orValue([])", celList(BaselineSysctls)),
				"a pod sets only the sysctls isolated from its node ("+strings.Join(BaselineSysctls, ", ")+")"),
		},
	}
}

// nodeRule is one of NodeAccess's checks, passed in a namespace the chart
// exempts.
func nodeRule(name, expr, says string) Validation {
	return Validation{
		Name:       name,
		Expression: "variables.exempt || (" + expr + ")",
		Message: fmt.Sprintf("[%s] on this cluster %s: such a pod reaches every process on its node, an exec by another name. "+
			"Request a break-glass session instead; node agents belong in a namespace the chart's params.nodeAccessNamespaces names.",
			name, says),
	}
}
