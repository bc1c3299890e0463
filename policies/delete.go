package policies

import (
	"fmt"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// labelledExpr is true when the object being deleted carries a session label.
var labelledExpr = fmt.Sprintf(`has(oldObject.metadata.labels) && %s in oldObject.metadata.labels`, q(v1alpha1.SessionLabel))

// PlaneDeletesGrantsOnly keeps the plane's ServiceAccounts (the portal, the
// sweeper) to deleting RoleBindings that carry a session label: a stolen
// token cannot take down other grants. A delete-collection request has no old
// object; it is refused. It reads no params, so no other delete waits on them.
func PlaneDeletesGrantsOnly() Policy {
	return Policy{
		Name:     "breakglass-plane-deletes-grants-only",
		Summary:  "The plane deletes only session grants.",
		Profiles: Profiles,
		Rules: []Rule{{APIGroups: []string{"rbac.authorization.k8s.io"}, APIVersions: []string{"v1"},
			Resources: []string{"rolebindings"}, Operations: []Operation{Delete}}},
		MatchConditions: []Condition{planeUserCondition},
		Validations: []Validation{{
			Name:       "delete.grants-only",
			Expression: labelledExpr,
			Message:    fmt.Sprintf("[delete.grants-only] the plane deletes only RoleBindings labelled %s.", v1alpha1.SessionLabel),
		}},
	}
}

// PlaneDeletesDebuggedPodsOnly keeps the plane's ServiceAccounts to deleting
// copy pods and pods that carry a debug container: recycling, never an
// outage.
func PlaneDeletesDebuggedPodsOnly() Policy {
	return Policy{
		Name:     "breakglass-plane-deletes-debugged-pods-only",
		Summary:  "The plane deletes only copy pods and pods it debugged.",
		Profiles: Profiles,
		Rules: []Rule{{APIGroups: []string{""}, APIVersions: []string{"v1"},
			Resources: []string{"pods"}, Operations: []Operation{Delete}}},
		MatchConditions: []Condition{planeUserCondition},
		Validations: []Validation{{
			Name: "delete.debugged-pods-only",
			Expression: fmt.Sprintf(`%s ||
				(has(oldObject.spec.ephemeralContainers) && oldObject.spec.ephemeralContainers.exists(c, c.name.startsWith('%s')))`,
				labelledExpr, v1alpha1.DebugContainerPrefix),
			Message: fmt.Sprintf("[delete.debugged-pods-only] the plane deletes only copy pods (labelled %s) and pods that carry a debug container.", v1alpha1.SessionLabel),
		}},
	}
}
