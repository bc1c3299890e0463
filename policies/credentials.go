package policies

import (
	"fmt"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// planeServiceAccountsExpr is the CEL list of the plane's ServiceAccounts'
// names (in v1alpha1.Namespace).
var planeServiceAccountsExpr = celList([]string{v1alpha1.PortalServiceAccount, v1alpha1.SweeperServiceAccount, v1alpha1.WebhookServiceAccount})

// PlaneTokens keeps the plane's accounts' tokens to the kubelet: a token
// request (serviceaccounts/token) for one of them is admitted only from a
// node (system:node:*, in system:nodes) for a pod, which the NodeRestriction
// admission plugin holds to a pod bound to that node and running as that
// account (plugin/pkg/admission/noderestriction). `kubectl create token
// tower-breakglass` is refused to everyone, cluster admins included: a
// token minted by hand is a standing credential of the portal's.
func PlaneTokens() Policy {
	return Policy{
		Name:     "breakglass-plane-tokens",
		Summary:  "The plane's accounts' tokens go only to the kubelet, for their own pods.",
		Profiles: Profiles,
		Rules: []Rule{{
			APIGroups: []string{""}, APIVersions: []string{"v1"},
			Resources: []string{"serviceaccounts/token"}, Operations: []Operation{Create},
		}},
		MatchConditions: []Condition{{
			Name:       "a-plane-account",
			Expression: fmt.Sprintf(`request.namespace == '%s' && request.name in %s`, v1alpha1.Namespace, planeServiceAccountsExpr),
		}},
		Validations: []Validation{{
			Name: "credentials.token-kubelet-only",
			Expression: `request.userInfo.username.startsWith('system:node:') && has(request.userInfo.groups) && 'system:nodes' in request.userInfo.groups &&
				has(object.spec.boundObjectRef) && object.spec.boundObjectRef.kind == 'Pod'`,
			Message: fmt.Sprintf("[credentials.token-kubelet-only] tokens for the plane's accounts (%s) are issued only to the kubelet, for the plane's own pods: "+
				"a token made by hand would be a standing credential, whoever asks (cluster admins included). Run the relay as the chart's pod, "+
				"or reach this cluster from a relay elsewhere as docs/operators.md says.", v1alpha1.Namespace),
		}},
	}
}

// PlaneTokenSecrets refuses legacy ServiceAccount token Secrets for the
// plane's accounts: the token controller fills a Secret of type
// kubernetes.io/service-account-token that names an account in its
// kubernetes.io/service-account.name annotation with a token that never
// expires (pkg/controller/serviceaccount/tokens_controller.go).
func PlaneTokenSecrets() Policy {
	return Policy{
		Name:     "breakglass-plane-token-secrets",
		Summary:  "No long-lived token Secret for the plane's accounts.",
		Profiles: Profiles,
		Rules: []Rule{{
			APIGroups: []string{""}, APIVersions: []string{"v1"},
			Resources: []string{"secrets"}, Operations: []Operation{Create, Update},
		}},
		MatchConditions: []Condition{{
			Name: "a-token-secret-of-the-plane",
			Expression: fmt.Sprintf(`request.namespace == '%s' && has(object.type) && object.type == 'kubernetes.io/service-account-token'`,
				v1alpha1.Namespace),
		}},
		Validations: []Validation{{
			Name: "credentials.no-token-secret",
			// An update that keeps the account is the token controller's or
			// the token cleaner's (labelling an old token invalid): only
			// naming a plane account anew is refused.
			Expression: fmt.Sprintf(`!(object.metadata.?annotations[?'kubernetes.io/service-account.name'].orValue('') in %[1]s) ||
				(request.operation == 'UPDATE' &&
				 oldObject.metadata.?annotations[?'kubernetes.io/service-account.name'].orValue('') ==
				 object.metadata.?annotations[?'kubernetes.io/service-account.name'].orValue(''))`, planeServiceAccountsExpr),
			Message: "[credentials.no-token-secret] a ServiceAccount token Secret for one of the plane's accounts would hold a token that never expires: " +
				"the plane's accounts get their tokens from the kubelet only.",
		}},
	}
}
