package policies

import (
	"fmt"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// Names of the plane's own objects these policies guard. This package is
// pure data and imports neither the webhook nor the sweeper. manifests takes
// the Secret's name from here; the sweeper's Role names its Lease with it, so
// a sweeper electing itself on another Lease would fail its own tests; the
// integration tests hold the configuration's name to webhook.ConfigurationName.
const (
	// WebhookConfigurationName is the ValidatingWebhookConfiguration the
	// webhook patches its CA bundle into (webhook.ConfigurationName).
	WebhookConfigurationName = "breakglass-webhook"
	// WebhookSecretName holds the webhook's self-managed certificate.
	WebhookSecretName = "breakglass-webhook-tls"
	// SweeperLeaseName is the sweeper's leader-election Lease in the plane's
	// namespace (LeaderElectionID in sweeper/manager.go).
	SweeperLeaseName = "breakglass-sweeper"
)

// webhookFields are the fields of a webhook in a ValidatingWebhookConfiguration,
// beside its name and clientConfig, that the webhook's account never changes.
// Every one is compared, present or absent. CEL cannot copy a typed object
// with one field changed, so they are named; a field a later Kubernetes adds
// is not compared until it is listed here.
var webhookFields = []string{
	"rules", "failurePolicy", "matchPolicy", "namespaceSelector", "objectSelector",
	"sideEffects", "timeoutSeconds", "admissionReviewVersions", "matchConditions",
}

// same is true when field f of a and of b are both absent, or both present
// and equal.
func same(a, b, f string) string {
	return fmt.Sprintf(`(has(%[1]s.%[3]s) ? (has(%[2]s.%[3]s) && %[1]s.%[3]s == %[2]s.%[3]s) : !has(%[2]s.%[3]s))`, a, b, f)
}

// allSame joins same for each field.
func allSame(a, b string, fields ...string) string {
	return allOf(fields, func(f string) string { return same(a, b, f) })
}

// WebhookCABundleOnly keeps the signature webhook's account to what its
// certificate rotation does (webhook.Certs.Ensure): a strategic-merge patch
// of clientConfig.caBundle into the webhooks of its own configuration. RBAC
// gives it patch on that one configuration by name, which would also let it
// add a webhook, switch failurePolicy to Ignore, point the URL elsewhere,
// narrow the rules or the match conditions: a stolen webhook token could
// then switch the signature check off.
func WebhookCABundleOnly() Policy {
	fields := append([]string{"clientConfig.url", "clientConfig.service"}, webhookFields...)
	return Policy{
		Name:     "breakglass-webhook-ca-bundle-only",
		Summary:  "The signature webhook's account changes only the CA bundle of its own webhook configuration.",
		Profiles: Profiles,
		Rules: []Rule{{
			APIGroups:   []string{"admissionregistration.k8s.io"},
			APIVersions: []string{"v1"},
			Resources:   []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"},
			Operations:  []Operation{Create, Update, Delete},
		}},
		MatchConditions: []Condition{{Name: "by-the-webhook", Expression: isWebhookExpr}},
		Variables: []Variable{
			{Name: "own", Expression: fmt.Sprintf(`request.resource.resource == 'validatingwebhookconfigurations' &&
				request.operation == 'UPDATE' && request.name == '%s'`, WebhookConfigurationName)},
			{Name: "webhooks", Expression: `has(object.webhooks) ? object.webhooks : []`},
			{Name: "oldWebhooks", Expression: `has(oldObject.webhooks) ? oldObject.webhooks : []`},
		},
		Validations: []Validation{
			{
				Name:       "webhook.own-configuration",
				Expression: `variables.own`,
				Message: fmt.Sprintf("[webhook.own-configuration] the signature webhook's account only updates the CA bundle of its own ValidatingWebhookConfiguration %s: it never creates or deletes a webhook configuration, nor changes another.",
					WebhookConfigurationName),
			},
			{
				Name: "webhook.ca-bundle-only",
				Expression: fmt.Sprintf(`!variables.own || (size(variables.webhooks) == size(variables.oldWebhooks) &&
					variables.webhooks.all(w, variables.oldWebhooks.exists(o, o.name == w.name &&
					%s)))`, allSame("w", "o", fields...)),
				Message: fmt.Sprintf("[webhook.ca-bundle-only] the signature webhook's account changes only clientConfig.caBundle of the webhooks already in %s: it adds, removes or renames no webhook and leaves the URL or service, rules, failurePolicy, matchPolicy, selectors, matchConditions, sideEffects, timeoutSeconds and admissionReviewVersions as the chart set them (change those with helm upgrade).",
					WebhookConfigurationName),
			},
			{
				Name: "webhook.metadata-unchanged",
				Expression: fmt.Sprintf(`!variables.own || (%s)`,
					allSame("object.metadata", "oldObject.metadata", "labels", "annotations", "ownerReferences", "finalizers")),
				Message: fmt.Sprintf("[webhook.metadata-unchanged] the signature webhook's account leaves the labels, annotations, owner references and finalizers of %s as they are: an owner reference would let the garbage collector delete it, an annotation could have another CA injected.",
					WebhookConfigurationName),
			},
		},
	}
}

// WebhookOwnSecret keeps the signature webhook's account to its one Secret.
// RBAC cannot limit create by name, so its Role lets it create any Secret in
// the plane's namespace; this holds it to the certificate Secret it keeps
// (webhook.Certs), in the shape it writes.
func WebhookOwnSecret() Policy {
	return Policy{
		Name:     "breakglass-webhook-own-secret",
		Summary:  "The signature webhook's account writes only its own certificate Secret, as a TLS Secret.",
		Profiles: Profiles,
		Rules: []Rule{{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"secrets"},
			Operations:  []Operation{Create, Update, Delete},
		}},
		MatchConditions: []Condition{{Name: "by-the-webhook", Expression: isWebhookExpr}},
		Validations: []Validation{
			{
				Name: "webhook.own-secret",
				// On CREATE the object's name is final here (generateName is
				// resolved before validating admission); DELETE has no object.
				Expression: fmt.Sprintf(`request.operation != 'DELETE' && request.namespace == '%s' &&
					has(object.metadata.name) && object.metadata.name == '%s'`, v1alpha1.Namespace, WebhookSecretName),
				Message: fmt.Sprintf("[webhook.own-secret] the signature webhook's account writes only its certificate Secret %s/%s, and never deletes a Secret: no other Secret is its business.",
					v1alpha1.Namespace, WebhookSecretName),
			},
			{
				Name: "webhook.secret-shape",
				Expression: `request.operation == 'DELETE' ||
					(has(object.type) && object.type == 'kubernetes.io/tls' &&
					 has(object.data) && ['tls.crt', 'tls.key', 'ca.crt'].all(k, k in object.data) &&
					 object.data.all(k, k in ['tls.crt', 'tls.key', 'ca.crt', 'previous-ca.crt']) &&
					 (!has(object.immutable) || !object.immutable))`,
				Message: "[webhook.secret-shape] the webhook's certificate Secret is of type kubernetes.io/tls with the keys tls.crt, tls.key and ca.crt (and previous-ca.crt after a renewal) and no other, and not immutable, so that it can be renewed.",
			},
		},
	}
}

// refersTo is a CEL expression true when the object reference ref names an
// object of kind in API group, in namespace (a CEL string expression).
func refersTo(ref, group, kind, namespace string) string {
	return fmt.Sprintf(`(has(%[1]s.apiVersion) && %[1]s.apiVersion.startsWith('%[2]s/') &&
		has(%[1]s.kind) && %[1]s.kind == '%[3]s' &&
		has(dyn(%[1]s).namespace) && dyn(%[1]s).namespace == %[4]s && has(%[1]s.name) && %[1]s.name != '')`, ref, group, kind, namespace)
}

// sessionRef is true when ref names a Session in the request's namespace.
func sessionRef(ref string) string {
	return refersTo(ref, v1alpha1.GroupVersion.Group, "Session", "request.namespace")
}

// sweeperLeaseRef is true when the sweeper records an Event in the plane's
// namespace about its own leader-election Lease, as client-go's leader
// election does ("became leader") through controller-runtime's recorder.
func sweeperLeaseRef(ref string) string {
	return fmt.Sprintf(`(%s && request.namespace == '%s' && %s && %s.name == '%s')`,
		isSweeperExpr, v1alpha1.Namespace, refersTo(ref, "coordination.k8s.io", "Lease", q(v1alpha1.Namespace)), ref, SweeperLeaseName)
}

// sweeperPortalRef is true when the sweeper records an Event in the plane's
// namespace about the portal's ServiceAccount: its backstop's finding of
// standing rights (sweeper.StandingRights).
func sweeperPortalRef(ref string) string {
	return fmt.Sprintf(`(%[1]s && request.namespace == '%[2]s' && has(%[3]s.apiVersion) && %[3]s.apiVersion == 'v1' &&
		has(%[3]s.kind) && %[3]s.kind == 'ServiceAccount' && has(dyn(%[3]s).namespace) && dyn(%[3]s).namespace == '%[2]s' &&
		has(%[3]s.name) && %[3]s.name == '%[4]s')`, isSweeperExpr, v1alpha1.Namespace, ref, v1alpha1.PortalServiceAccount)
}

// PlaneEvents fences the Events the plane's ServiceAccounts write. Their
// roles let them record Events in any namespace (RBAC cannot name what an
// Event is about); the relay records each step of a session as an Event on
// the Session (relay/debugsession Step), the sweeper's leader election one on its
// Lease. It matches the events.k8s.io API and, through matchPolicy
// Equivalent, the core one too: the API server shows this policy a core v1
// Event converted to events.k8s.io/v1 (involvedObject becomes regarding).
// One policy in one schema: a rule for core events would be type-checked
// against both Event kinds too (an empty API group matches any), and
// involvedObject is no field of the other.
func PlaneEvents() Policy {
	aboutOK := func(ref string) string {
		return fmt.Sprintf(`has(%s) && (%s || %s || %s)`, ref, sessionRef(ref), sweeperLeaseRef(ref), sweeperPortalRef(ref))
	}
	return Policy{
		Name:     "breakglass-plane-events",
		Summary:  "The plane's ServiceAccounts record Events only about Sessions, in the Session's namespace (and the sweeper about its Lease).",
		Profiles: Profiles,
		Rules: []Rule{{
			APIGroups:   []string{"events.k8s.io"},
			APIVersions: []string{"v1"},
			Resources:   []string{"events"},
			Operations:  []Operation{Create, Update},
		}},
		MatchConditions: []Condition{planeUserCondition},
		Validations: []Validation{
			{
				Name:       "event.about-a-session",
				Expression: aboutOK("object.regarding"),
				Message: fmt.Sprintf("[event.about-a-session] the plane records Events only about a Session (involvedObject or regarding: kind Session, apiVersion %s) in the Event's own namespace; the sweeper also about its Lease %s/%s and the portal's ServiceAccount there. Write anything else to the audit log.",
					v1alpha1.GroupVersion.String(), v1alpha1.Namespace, SweeperLeaseName),
			},
			{
				Name:       "event.related",
				Expression: fmt.Sprintf(`!has(object.related) || %s`, sessionRef("object.related")),
				Message:    "[event.related] an Event the plane records names no related object but a Session in the Event's own namespace.",
			},
			{
				Name:       "event.update-own",
				Expression: fmt.Sprintf(`request.operation != 'UPDATE' || (%s)`, aboutOK("oldObject.regarding")),
				Message:    "[event.update-own] the plane updates only Events about a Session (or the sweeper's Lease): another component's Event is not the plane's to rewrite.",
			},
		},
	}
}

// SweeperLease keeps the sweeper's leader-election Lease to the sweeper:
// whoever holds it, and keeps renewing it, stops every sweeper replica from
// leading, and expired grants then stand. Leases in the plane's namespace
// are otherwise writable by whoever an admin lets write them, and cluster
// admins write them all; so this holds for every user, cluster admins
// included. Deleting the namespace still deletes it.
func SweeperLease() Policy {
	lease := fmt.Sprintf(`request.namespace == '%s' && request.name == '%s'`, v1alpha1.Namespace, SweeperLeaseName)
	return Policy{
		Name:     "breakglass-sweeper-lease",
		Summary:  "Only the sweeper writes its leader-election Lease, and it writes no other.",
		Profiles: Profiles,
		Rules: []Rule{{
			APIGroups:   []string{"coordination.k8s.io"},
			APIVersions: []string{"v1"},
			Resources:   []string{"leases"},
			Operations:  []Operation{Create, Update, Delete},
		}},
		// Every node's heartbeat is a Lease update: two string comparisons
		// let all of them through before anything else is evaluated.
		MatchConditions: []Condition{{
			Name:       "the-sweepers-lease-or-the-sweeper",
			Expression: fmt.Sprintf(`(%s) || %s`, lease, isSweeperExpr),
		}},
		Validations: []Validation{
			{
				Name: "lease.sweeper-only",
				// The namespace controller empties a namespace being deleted.
				Expression: fmt.Sprintf(`%s || (request.operation == 'DELETE' &&
					has(namespaceObject.status) && has(namespaceObject.status.phase) && namespaceObject.status.phase == 'Terminating')`, isSweeperPodExpr),
				Message: fmt.Sprintf("[lease.sweeper-only] the Lease %s/%s elects the sweeper: only its ServiceAccount %s creates, renews or releases it, cluster admins included, so nobody can hold it and stop expired grants from being swept. To stop the sweeper, scale its Deployment down; a dead holder's lease runs out on its own.",
					v1alpha1.Namespace, SweeperLeaseName, v1alpha1.SweeperServiceAccount),
			},
			{
				Name:       "lease.sweeper-own-lease",
				Expression: fmt.Sprintf(`!(%s) || (%s)`, isSweeperExpr, lease),
				Message: fmt.Sprintf("[lease.sweeper-own-lease] the sweeper's account writes only its own leader-election Lease %s/%s.",
					v1alpha1.Namespace, SweeperLeaseName),
			},
		},
	}
}
