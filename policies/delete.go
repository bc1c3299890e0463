package policies

import (
	"fmt"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// labelledExpr is true when the object being deleted carries a session label.
var labelledExpr = fmt.Sprintf(`has(oldObject.metadata.labels) && %s in oldObject.metadata.labels`, q(v1alpha1.SessionLabel))

// PlaneDeletesGrantsOnly keeps the plane's ServiceAccounts (the portal, the
// sweeper) to deleting RoleBindings that carry a session label: a stolen
// token cannot take down other grants. The sweeper's backstop also deletes
// a binding that names a plane account outright (standing rights no
// admission stopped: made before the plane, or while its policies were
// gone), never one of the chart's own. A delete-collection request has no
// old object; it is refused.
func PlaneDeletesGrantsOnly() Policy {
	return Policy{
		Name:     "breakglass-plane-deletes-grants-only",
		Summary:  "The plane deletes only session grants, and the sweeper standing bindings of the plane's accounts.",
		Profiles: Profiles,
		Rules: []Rule{{APIGroups: []string{"rbac.authorization.k8s.io"}, APIVersions: []string{"v1"},
			Resources: []string{"rolebindings", "clusterrolebindings"}, Operations: []Operation{Delete}}},
		MatchConditions: []Condition{planeUserCondition},
		Validations: []Validation{{
			Name: "delete.grants-only",
			Expression: fmt.Sprintf(`(request.resource.resource == 'rolebindings' && %s) ||
				(%s && has(oldObject.subjects) && oldObject.subjects.exists(s, %s) && !%s)`,
				labelledExpr, isSweeperExpr, planeSubjectExpr, chartBindingExpr("oldObject")),
			Message: fmt.Sprintf("[delete.grants-only] the plane deletes only RoleBindings labelled %s; the sweeper also bindings that name "+
				"a plane account, the chart's own excepted.", v1alpha1.SessionLabel),
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
