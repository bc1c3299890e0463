package policies

import (
	"fmt"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// PlaneDeleteScope keeps the plane's own deletes to its own objects: its
// ServiceAccounts (the portal, the sweeper) delete only RoleBindings that
// carry a session label, and only pods that are copies or carry a debug
// container. A stolen portal or sweeper token cannot take down other grants
// or workloads. A delete-collection request has no old object; it is refused.
// It reads no params, so every other delete in the cluster never waits on them.
func PlaneDeleteScope() Policy {
	session := q(v1alpha1.SessionLabel)
	return Policy{
		Name:     "breakglass-plane-delete-scope",
		Summary:  "The plane deletes only session grants and debugged pods.",
		Profiles: Profiles,
		Rules: []Rule{
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Operations: []Operation{Delete}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Operations: []Operation{Delete}},
		},
		MatchConditions: []Condition{planeUserCondition},
		Variables: []Variable{
			{Name: "labelled", Expression: fmt.Sprintf(`has(oldObject.metadata.labels) && %s in oldObject.metadata.labels`, session)},
		},
		Validations: []Validation{
			{
				Name:       "delete.grants-only",
				Expression: `request.resource.resource != 'rolebindings' || variables.labelled`,
				Message:    fmt.Sprintf("[delete.grants-only] the plane deletes only RoleBindings labelled %s.", v1alpha1.SessionLabel),
			},
			{
				Name: "delete.debugged-pods-only",
				Expression: fmt.Sprintf(`request.resource.resource != 'pods' || variables.labelled ||
					(has(oldObject.spec.ephemeralContainers) && oldObject.spec.ephemeralContainers.exists(c, c.name.startsWith('%s')))`,
					v1alpha1.DebugContainerPrefix),
				Message: fmt.Sprintf("[delete.debugged-pods-only] the plane deletes only copy pods (labelled %s) and pods that carry a debug container.", v1alpha1.SessionLabel),
			},
		},
	}
}
