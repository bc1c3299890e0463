package policies

import (
	"fmt"
	"strings"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// CEL snippets several policies share.
const (
	// durationPattern is the Go duration subset the TTL label and bounds use.
	durationPattern = `^([0-9]+h)?([0-9]+m)?([0-9]+s)?$`
	// digestPattern is an image reference pinned by digest.
	digestPattern = `^[^@\\s]+@sha256:[a-f0-9]{64}$`
)

// debugRolesExpr is the CEL list of the two debug ClusterRoles.
var debugRolesExpr = fmt.Sprintf("['%s', '%s']", v1alpha1.DebugRole, v1alpha1.DebugProcessRole)

// isPlaneExpr is true for requests by the plane's own ServiceAccounts (the
// portal, the sweeper, the webhook), each named: another ServiceAccount in
// the plane's namespace is nobody special.
var isPlaneExpr = fmt.Sprintf(`request.userInfo.username in ['%s', '%s', '%s']`,
	v1alpha1.PortalUsername, v1alpha1.SweeperUsername, v1alpha1.WebhookUsername)

// isPortalExpr and isSweeperExpr are true for requests by that one identity.
var (
	isPortalExpr  = fmt.Sprintf(`request.userInfo.username == '%s'`, v1alpha1.PortalUsername)
	isSweeperExpr = fmt.Sprintf(`request.userInfo.username == '%s'`, v1alpha1.SweeperUsername)
	isWebhookExpr = fmt.Sprintf(`request.userInfo.username == '%s'`, v1alpha1.WebhookUsername)
)

// PodBoundExtra is the user extra the API server sets for a request made
// with a ServiceAccount token the kubelet issued for a pod: the name of the
// pod it is bound to (k8s.io/apiserver/pkg/authentication/serviceaccount).
// An impersonator of the account (without impersonate on userextras), a
// client certificate naming it or a legacy token Secret's token lack it.
const PodBoundExtra = "authentication.kubernetes.io/pod-name"

// podBoundExpr is true for a request made with a pod's own token.
var podBoundExpr = fmt.Sprintf(`(has(request.userInfo.extra) && '%s' in request.userInfo.extra)`, PodBoundExtra)

// The plane's accounts as they act through their own pods: what only the
// portal (or the sweeper) may do asks for these. Fences that hold the
// plane's accounts to less keep matching them by name alone (isPlaneExpr),
// so that no spelling of the account escapes them.
var (
	isPortalPodExpr  = isPortalExpr + " && " + podBoundExpr
	isSweeperPodExpr = isSweeperExpr + " && " + podBoundExpr
)

// planeUserCondition narrows a policy to requests by the plane's own ServiceAccounts.
var planeUserCondition = Condition{Name: "by-the-plane", Expression: isPlaneExpr}

// processAccessAllowedExpr asks the authorizer whether the requester holds the
// custom verb only breakglass:debug-process grants, in this namespace.
var processAccessAllowedExpr = fmt.Sprintf(
	`authorizer.group('%s').resource('%s').namespace(request.namespace).check('%s').allowed()`,
	v1alpha1.GroupVersion.Group, v1alpha1.ProcessAccessResource, v1alpha1.ProcessAccessVerb)

// q quotes s as a CEL string literal; the names it is used on hold no quotes.
func q(s string) string { return "'" + s + "'" }

// celList is the CEL list literal of names, each quoted with q.
func celList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = q(n)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// allOf joins f of each item with &&: one condition that holds for all.
func allOf(items []string, f func(string) string) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = f(it)
	}
	return strings.Join(parts, " &&\n\t\t")
}

// The requests several policies see.
var (
	podCreates    = Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Operations: []Operation{Create}}
	bindingWrites = Rule{APIGroups: []string{"rbac.authorization.k8s.io"}, APIVersions: []string{"v1"},
		Resources: []string{"rolebindings", "clusterrolebindings"}, Operations: []Operation{Create, Update}}
)
