package manifests

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/webhook"
)

// carriesDebugContainer is the match condition that keeps every other
// request away from the webhook: only a pod create with a breakglass-
// container, an ephemeral-container update that adds one, or a pod update
// that changes a breakglass- container's image (only a copy has such
// containers) is sent to it. The rules send UPDATE only for pods and
// pods/ephemeralcontainers and CREATE only for pods.
const carriesDebugContainer = `(request.operation == 'UPDATE' && request.?subResource.orValue('') == 'ephemeralcontainers' &&
  has(object.spec.ephemeralContainers) &&
  object.spec.ephemeralContainers.exists(c, c.name.startsWith('` + v1alpha1.DebugContainerPrefix + `'))) ||
(request.operation == 'UPDATE' && request.?subResource.orValue('') == '' &&
  (object.spec.containers + object.spec.?initContainers.orValue([])).exists(c, c.name.startsWith('` + v1alpha1.DebugContainerPrefix + `') &&
    !(oldObject.spec.containers + oldObject.spec.?initContainers.orValue([])).exists(o, o.name == c.name && o.image == c.image))) ||
(request.operation == 'CREATE' &&
  (object.spec.containers.exists(c, c.name.startsWith('` + v1alpha1.DebugContainerPrefix + `')) ||
   (has(object.spec.initContainers) && object.spec.initContainers.exists(c, c.name.startsWith('` + v1alpha1.DebugContainerPrefix + `')))))`

// WebhookConfiguration registers the signature webhook, failing closed for
// the requests it sees. clientConfig is the Service (in a cluster) or a URL
// (in tests); the webhook patches its CA bundle in.
func WebhookConfiguration(clientConfig admissionregistrationv1.WebhookClientConfig) *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	scope := admissionregistrationv1.NamespacedScope
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: meta(webhook.ConfigurationName, ""),
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         webhook.WebhookName,
			ClientConfig: clientConfig,
			Rules: []admissionregistrationv1.RuleWithOperations{
				{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope}},
				{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/ephemeralcontainers", "pods"}, Scope: &scope}},
			},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "carries-a-debug-container", Expression: carriesDebugContainer}},
			FailurePolicy:           &fail,
			MatchPolicy:             &equivalent,
			SideEffects:             &none,
			TimeoutSeconds:          ptr.To[int32](webhook.TimeoutSeconds),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// ServiceClientConfig points the webhook configuration at the webhook's Service.
func ServiceClientConfig() admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: v1alpha1.Namespace, Name: "breakglass-webhook", Path: ptr.To(webhook.Path), Port: ptr.To[int32](443),
	}}
}

// WebhookRoles let the webhook keep its certificate in one Secret and patch
// its own configuration's CA bundle, and nothing else.
func WebhookRoles() []runtime.Object {
	const name = "breakglass:webhook"
	// create cannot be limited by name; the Role is limited to the plane's
	// namespace and the breakglass-webhook-own-secret policy to this one Secret.
	role, binding := planeRole(name, v1alpha1.WebhookServiceAccount, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "update"}, ResourceNames: []string{WebhookSecretName}},
	})
	return []runtime.Object{
		// Certs.Ensure only patches (it never reads the configuration); the
		// breakglass-webhook-ca-bundle-only policy holds the patch to the CA bundle.
		clusterRole(name, []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"},
			Resources: []string{"validatingwebhookconfigurations"}, Verbs: []string{"patch"}, ResourceNames: []string{webhook.ConfigurationName}}}),
		&rbacv1.ClusterRoleBinding{
			TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"}, ObjectMeta: meta(name, ""),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: v1alpha1.WebhookServiceAccount, Namespace: v1alpha1.Namespace}},
		},
		role, binding,
	}
}

// WebhookSecretName holds the webhook's self-managed certificate; the
// policies name it too, and fence the webhook's account to it.
const WebhookSecretName = policies.WebhookSecretName
