package policies

import (
	"fmt"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// NoExec refuses exec into any pod on Flight, to everyone, system:masters
// included: a debug container is the only way in. CONNECT covers both the
// WebSocket (GET) and the SPDY (POST) exec paths. It reads no params, so
// nothing can switch it off but deleting the policy.
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

// Attach limits pods/attach. On Flight only the plane (the portal) attaches,
// and only to a debug container. On Ground people may still attach as their
// RBAC allows, but the portal's grant reaches debug containers only. It reads
// no params, so attach never waits on them.
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
				Expression: isPlaneExpr,
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
