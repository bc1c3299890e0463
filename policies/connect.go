package policies

import (
	"fmt"
	"strings"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// NoExec refuses exec into any pod on Flight, to everyone, system:masters
// included: a debug container is the only way in. CONNECT covers both the
// WebSocket (GET) and the SPDY (POST) exec paths. Nothing can switch it off
// but deleting the policy.
func NoExec() Policy {
	return Policy{
		Name:     "breakglass-no-exec",
		Summary:  "No exec on production, for anyone.",
		Profiles: []Profile{Flight},
		Rules: []Rule{{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"pods/exec"},
			Operations:  []Operation{Connect},
		}},
		Validations: []Validation{{
			Name:       "exec.never",
			Expression: `false`,
			Message:    "[exec.never] exec is disabled on this cluster: request a break-glass debug session in the portal instead.",
		}},
	}
}

// kubeletReadOnlyPaths are the kubelet endpoints that only read the node's
// health and figures; every other path through nodes/proxy (run, exec,
// attach, portForward, containerLogs, pods, logs, configz, debug) is refused
// on Flight. Paths are matched whole, so no "metrics/../run" slips through.
var kubeletReadOnlyPaths = []string{"healthz", "metrics", "metrics/cadvisor", "metrics/probes", "metrics/resource", "stats/summary"}

// NoSideDoors refuses on Flight, to everyone, the other ways than exec to run
// or reach something inside a production pod through the API server:
// port-forward, the pod and service proxies, and the kubelet's own API
// through the node proxy (its run, exec and attach above all).
func NoSideDoors() Policy {
	return Policy{
		Name:     "breakglass-no-side-doors",
		Summary:  "No port-forward, pod or service proxy, or kubelet API beyond read-only figures on production, for anyone.",
		Profiles: []Profile{Flight},
		Rules: []Rule{{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"pods/portforward", "pods/proxy", "services/proxy", "nodes/proxy"},
			Operations:  []Operation{Connect},
		}},
		Validations: []Validation{
			{
				Name:       "portforward.never",
				Expression: `request.subResource != 'portforward'`,
				Message:    "[portforward.never] port-forward is disabled on this cluster: reach the app through its Service, or request a break-glass debug session in the portal.",
			},
			{
				Name:       "proxy.pods",
				Expression: `request.resource.resource != 'pods' || request.subResource != 'proxy'`,
				Message:    "[proxy.pods] the pod proxy is disabled on this cluster: reach the app through its Service or Ingress, or request a break-glass debug session in the portal.",
			},
			{
				Name:       "proxy.services",
				Expression: `request.resource.resource != 'services'`,
				Message:    "[proxy.services] the service proxy is disabled on this cluster: reach the app through its Ingress or a debug session.",
			},
			{
				Name: "proxy.nodes",
				Expression: fmt.Sprintf(`request.resource.resource != 'nodes' ||
					((!has(request.name) || !request.name.contains(':')) && has(object.path) && (object.path.startsWith('/') ? object.path.substring(1) : object.path) in %s)`, celList(kubeletReadOnlyPaths)),
				Message: fmt.Sprintf("[proxy.nodes] through the node proxy this cluster serves only the kubelet's read-only figures (%s), on the kubelet's own port: "+
					"its run, exec, attach and port-forward are disabled; request a break-glass debug session in the portal.",
					strings.Join(kubeletReadOnlyPaths, ", ")),
			},
		},
	}
}

// Attach limits pods/attach. On Flight only the plane (the portal) attaches,
// and only to a debug container. On Ground people may still attach as their
// RBAC allows, but the portal's grant reaches debug containers only.
func Attach() Policy {
	return Policy{
		Name:     "breakglass-attach",
		Summary:  "Attach only to debug containers; on Flight only by the portal.",
		Profiles: Profiles,
		Rules: []Rule{{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"pods/attach"},
			Operations:  []Operation{Connect},
		}},
		MatchConditions: []Condition{{
			Name:       planeUserCondition.Name,
			Expression: planeUserCondition.Expression,
			Profiles:   []Profile{Ground},
		}},
		Validations: []Validation{
			{
				Name:       "attach.portal-only",
				Expression: isPortalPodExpr,
				Message:    "[attach.portal-only] on this cluster only the break-glass portal attaches to containers: request a session in the portal.",
				Profiles:   []Profile{Flight},
			},
			{
				Name: "attach.debug-container",
				Expression: fmt.Sprintf(`!(%s) ||
					(has(object.container) && object.container.startsWith('%s'))`, isPlaneExpr, v1alpha1.DebugContainerPrefix),
				Message: fmt.Sprintf("[attach.debug-container] the portal attaches only to a debug container (name starting with %q), named explicitly.",
					v1alpha1.DebugContainerPrefix),
			},
		},
	}
}
