package integration

// Each identity of the plane changes only what its own code writes. The
// allowed writes go through the plane's own code where it can run here (the
// webhook's certificate rotation, the relay's Session Event, client-go's
// leader election as the sweeper runs it); the refused ones are what a
// stolen token, or an admin, would try.

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/internal/pki"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/webhook"
)

var saGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + v1alpha1.Namespace, "system:authenticated"}

// allowed asks the real authorizer whether user (a ServiceAccount of the
// plane's namespace) may do attr.
func allowed(t *testing.T, c *cluster.Cluster, user string, attr authorizationv1.ResourceAttributes) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: saGroups, ResourceAttributes: &attr}}
	got, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(testContext(t), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Status.Allowed
}

// waitAllowed waits until RBAC's informers have caught up with a role just applied.
func waitAllowed(t *testing.T, c *cluster.Cluster, user string, attr authorizationv1.ResourceAttributes) {
	t.Helper()
	cluster.Eventually(t, 30*time.Second, fmt.Sprintf("%s may %s %s/%s", user, attr.Verb, attr.Resource, attr.Name), func() (bool, error) {
		return allowed(t, c, user, attr), nil
	})
}

// webhookRoles applies the webhook's roles as the chart ships them (the test
// control plane installs the chart's profile files, not the webhook's
// template) and returns clients acting as the webhook's ServiceAccount. They
// stay: they are what every installation with the webhook holds.
func webhookRoles(t *testing.T, c *cluster.Cluster) *cluster.User {
	t.Helper()
	for _, o := range manifests.WebhookRoles() {
		if err := c.Apply(testContext(t), o.(client.Object)); err != nil {
			t.Fatal(err)
		}
	}
	waitAllowed(t, c, v1alpha1.WebhookUsername, authorizationv1.ResourceAttributes{
		Verb: "patch", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: webhook.ConfigurationName})
	waitAllowed(t, c, v1alpha1.WebhookUsername, authorizationv1.ResourceAttributes{
		Namespace: v1alpha1.Namespace, Verb: "create", Resource: "secrets"})
	return mustUser(t)(c.AsServiceAccount(v1alpha1.Namespace, v1alpha1.WebhookServiceAccount))
}

// inertWebhookConfiguration creates the chart's webhook configuration under
// its real name, pointed at a URL nobody serves, that can call nothing: its
// match condition is false, its object selector matches no object of the
// other tests, and it is ignored if it ever fails. It goes after the test.
func inertWebhookConfiguration(t *testing.T, c *cluster.Cluster) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	cfg := manifests.WebhookConfiguration(admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1" + webhook.Path)})
	hook := &cfg.Webhooks[0]
	hook.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "never-in-tests", Expression: "false"}}
	hook.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"breakglass.tower.dev/identities-test": "never"}}
	hook.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	if err := c.Client.Create(testContext(t), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), cfg) })
	return cfg
}

// widen gives user, through a ClusterRole, what RBAC must never give it, to
// show the policy holds where RBAC was widened by mistake. It goes after the test.
func widen(t *testing.T, c *cluster.Cluster, name, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := testContext(t)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if err := c.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), role) })
	// A binding of a plane account is itself refused now: this one stands
	// as one made before the plane was installed would.
	c.CreateUnfenced(t, binding)
	r := rules[0]
	waitAllowed(t, c, user, authorizationv1.ResourceAttributes{Namespace: v1alpha1.Namespace, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]})
}

// TestWebhookChangesOnlyItsCABundle: the webhook's certificate rotation, run
// as its ServiceAccount, patches the CA bundle and is admitted, first and on
// renewal; every other change its RBAC would allow is refused. Admission
// policies do apply to webhook configurations (only webhooks are kept from
// seeing them), which this shows on the real API server.
func TestWebhookChangesOnlyItsCABundle(t *testing.T) {
	if policies.WebhookConfigurationName != webhook.ConfigurationName || policies.WebhookSecretName != manifests.WebhookSecretName {
		t.Fatalf("the policies guard %s and %s; the webhook uses %s and %s", policies.WebhookConfigurationName,
			policies.WebhookSecretName, webhook.ConfigurationName, manifests.WebhookSecretName)
	}
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ctx := testContext(t)
		wh := webhookRoles(t, c)
		inertWebhookConfiguration(t, c)
		t.Cleanup(func() {
			_ = c.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: manifests.WebhookSecretName, Namespace: v1alpha1.Namespace}})
		})
		current := func() *admissionregistrationv1.ValidatingWebhookConfiguration {
			t.Helper()
			got, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhook.ConfigurationName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		certs := func(now time.Time) *webhook.Certs {
			return &webhook.Certs{Kube: wh.Kube, Namespace: v1alpha1.Namespace, SecretName: manifests.WebhookSecretName,
				WebhookConfiguration: webhook.ConfigurationName, DNSNames: []string{"breakglass-webhook.breakglass-system.svc"},
				CertDir: t.TempDir(), Validity: 90 * 24 * time.Hour, Clock: clocktesting.NewFakePassiveClock(now)}
		}
		secretCA := func() []byte {
			t.Helper()
			sec, err := c.Kube.CoreV1().Secrets(v1alpha1.Namespace).Get(ctx, manifests.WebhookSecretName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return sec.Data[webhook.CAFile]
		}

		t.Run("the webhook stores its certificate and patches the CA bundle", func(t *testing.T) {
			wantAdmitted(t, certs(time.Now()).Ensure(ctx))
			if got := current().Webhooks[0].ClientConfig.CABundle; len(got) == 0 || string(got) != string(secretCA()) {
				t.Fatalf("the CA bundle is %q, want the Secret's CA", got)
			}
		})
		t.Run("the webhook renews its certificate and patches the new CA bundle", func(t *testing.T) {
			before := secretCA()
			wantAdmitted(t, certs(time.Now().Add(80*24*time.Hour)).Ensure(ctx))
			after := secretCA()
			if string(after) == string(before) {
				t.Fatal("the certificate was not renewed")
			}
			// The renewed CA, and the one before it for replicas that have not reloaded yet.
			if got := current().Webhooks[0].ClientConfig.CABundle; string(got) != string(after)+string(before) {
				t.Fatal("the CA bundle is not the renewed CA followed by the previous one")
			}
		})

		hook := webhook.WebhookName
		newHook := `{"name":"extra.example.com","clientConfig":{"url":"https://127.0.0.1:1/extra"},
			"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}],
			"objectSelector":{"matchLabels":{"breakglass.tower.dev/identities-test":"never"}},
			"matchConditions":[{"name":"never","expression":"false"}],
			"failurePolicy":"Ignore","sideEffects":"None","admissionReviewVersions":["v1"]}`
		for _, tc := range []struct{ name, patch, want string }{
			{"add a webhook", `{"webhooks":[` + newHook + `]}`, "[webhook.ca-bundle-only]"},
			{"switch failurePolicy", fmt.Sprintf(`{"webhooks":[{"name":%q,"failurePolicy":"Fail"}]}`, hook), "[webhook.ca-bundle-only]"},
			{"point the URL elsewhere", fmt.Sprintf(`{"webhooks":[{"name":%q,"clientConfig":{"url":"https://127.0.0.1:2/always-yes"}}]}`, hook), "[webhook.ca-bundle-only]"},
			{"narrow the rules", fmt.Sprintf(`{"webhooks":[{"name":%q,"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}]}]}`, hook), "[webhook.ca-bundle-only]"},
			{"drop the match conditions", fmt.Sprintf(`{"webhooks":[{"name":%q,"matchConditions":null}]}`, hook), "[webhook.ca-bundle-only]"},
			{"shorten the timeout", fmt.Sprintf(`{"webhooks":[{"name":%q,"timeoutSeconds":1}]}`, hook), "[webhook.ca-bundle-only]"},
			{"give it an owner to be collected", `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"00000000-0000-0000-0000-000000000000"}]}}`, "[webhook.metadata-unchanged]"},
		} {
			t.Run("the webhook may not "+tc.name, func(t *testing.T) {
				before := current()
				_, err := wh.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, webhook.ConfigurationName,
					types.StrategicMergePatchType, []byte(tc.patch), metav1.PatchOptions{})
				wantDenied(t, err, tc.want)
				if after := current(); after.ResourceVersion != before.ResourceVersion {
					t.Fatal("the configuration changed")
				}
			})
		}

		t.Run("with RBAC widened by mistake, the webhook still may not create or delete a configuration", func(t *testing.T) {
			widen(t, c, "identities-test:webhook-widened", v1alpha1.WebhookUsername, rbacv1.PolicyRule{
				APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"},
				Verbs: []string{"create", "update", "delete"}})
			other := current().DeepCopy()
			other.ObjectMeta = metav1.ObjectMeta{Name: "identities-test-always-yes"}
			wantDenied(t, wh.Client.Create(ctx, other, dryRun), "[webhook.own-configuration]")
			wantDenied(t, wh.Client.Delete(ctx, current(), dryRun), "[webhook.own-configuration]")
			put := current()
			put.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Fail)
			wantDenied(t, wh.Client.Update(ctx, put, dryRun), "[webhook.ca-bundle-only]")
		})
	})
}

// TestWebhookWritesOnlyItsSecret: RBAC lets the webhook create any Secret in
// the plane's namespace; the policy keeps it to its certificate Secret, in
// the shape its rotation writes.
func TestWebhookWritesOnlyItsSecret(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ctx := testContext(t)
		wh := webhookRoles(t, c)
		secrets := wh.Kube.CoreV1().Secrets(v1alpha1.Namespace)
		ca, err := pki.NewCA("identities-test-ca", time.Now().Add(-time.Minute), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		serving, err := ca.Issue("breakglass-webhook", []string{"breakglass-webhook.breakglass-system.svc"}, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		own := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: manifests.WebhookSecretName, Namespace: v1alpha1.Namespace},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{webhook.CertFile: serving.CertPEM, webhook.KeyFile: serving.KeyPEM, webhook.CAFile: ca.PEM},
		}
		t.Cleanup(func() { _ = c.Client.Delete(context.Background(), own.DeepCopy()) })

		stored, err := secrets.Create(ctx, own.DeepCopy(), metav1.CreateOptions{})
		wantAdmitted(t, err)
		stash := own.DeepCopy()
		stash.Name, stash.Type, stash.Data = "stash", corev1.SecretTypeOpaque, map[string][]byte{"loot": []byte("x")}
		_, err = secrets.Create(ctx, stash, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		wantDenied(t, err, "[webhook.own-secret] the signature webhook's account writes only its certificate Secret breakglass-system/breakglass-webhook-tls")
		tlsElsewhere := own.DeepCopy()
		tlsElsewhere.Name = "breakglass-webhook-tls-2"
		_, err = secrets.Create(ctx, tlsElsewhere, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		wantDenied(t, err, "[webhook.own-secret]")
		stash.Namespace = "default"
		_, err = wh.Kube.CoreV1().Secrets("default").Create(ctx, stash, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if !isForbiddenByRBAC(err) {
			t.Fatalf("a Secret in another namespace: want refused by RBAC, got %v", err)
		}

		extra := stored.DeepCopy()
		extra.Data["extra"] = []byte("x")
		_, err = secrets.Update(ctx, extra, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		wantDenied(t, err, "[webhook.secret-shape]")
		frozen := stored.DeepCopy()
		frozen.Immutable = ptr.To(true)
		_, err = secrets.Update(ctx, frozen, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		wantDenied(t, err, "[webhook.secret-shape]")
		renewed := stored.DeepCopy()
		renewed.Data[webhook.CAFile] = append(append([]byte(nil), ca.PEM...), ca.PEM...)
		_, err = secrets.Update(ctx, renewed, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		wantAdmitted(t, err)

		widen(t, c, "identities-test:webhook-secrets-widened", v1alpha1.WebhookUsername, rbacv1.PolicyRule{
			APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"delete"}})
		err = secrets.Delete(ctx, manifests.WebhookSecretName, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		wantDenied(t, err, "[webhook.own-secret]")
	})
}

// TestPlaneEventsAboutSessionsOnly: the relay's own Event on a Session is
// recorded; an Event about anything else, or in another namespace than its
// Session's, is refused, through either Event API.
func TestPlaneEventsAboutSessionsOnly(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ctx := testContext(t)
		ns := namespace(t, c, "events")
		other := namespace(t, c, "events-other")
		portal := mustUser(t)(c.Portal())
		sweeper := mustUser(t)(c.Sweeper())

		t.Run("the relay records a step on the Session", func(t *testing.T) {
			s := &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Name: "s-events", Namespace: ns, UID: "11111111-1111-1111-1111-111111111111"}}
			runner := &debugsession.Runner{Kube: portal.Kube, Clock: clock.RealClock{}}
			if err := runner.Lifecycle().Note(ctx, v1alpha1.StepGrant, v1alpha1.PortalUsername, s, "a grant for 30m"); err != nil {
				t.Fatal(err)
			}
			// Note drops a refused Event (the audit log is the record), and
			// posts it beside the step: look for it once it is posted.
			lifecycle.EventsPosted(10 * time.Second)
			list, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=s-events"})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 1 || list.Items[0].Reason != "Grant" || list.Items[0].InvolvedObject.Kind != "Session" {
				t.Fatalf("the relay's Event on the Session: %+v", list.Items)
			}
		})

		session := corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Session", Namespace: ns, Name: "s-events"}
		pod := corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: "web-1"}
		coreEvent := func(eventNS string, about corev1.ObjectReference) *corev1.Event {
			now := metav1.Now()
			return &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "identities-", Namespace: eventNS},
				InvolvedObject: about, Reason: "Grant", Message: "test", Type: corev1.EventTypeNormal,
				Source: corev1.EventSource{Component: "breakglass-relay"}, FirstTimestamp: now, LastTimestamp: now, Count: 1}
		}
		// The events.k8s.io shape (eventTime set) lets an Event live in
		// another namespace than what it is about: only the policy refuses that.
		newEvent := func(eventNS string, regarding corev1.ObjectReference) *eventsv1.Event {
			return &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "identities-", Namespace: eventNS},
				Regarding: regarding, Reason: "Grant", Action: "Grant", Note: "test", Type: corev1.EventTypeNormal,
				EventTime: metav1.NowMicro(), ReportingController: "breakglass.tower.dev/relay", ReportingInstance: "relay-0"}
		}
		create := func(u *cluster.User, e *corev1.Event) error {
			_, err := u.Kube.CoreV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
			return err
		}
		createV1 := func(u *cluster.User, e *eventsv1.Event) error {
			_, err := u.Kube.EventsV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
			return err
		}
		withRelated := coreEvent(ns, session)
		withRelated.Related = &pod
		elsewhere := coreEvent(ns, corev1.ObjectReference{APIVersion: session.APIVersion, Kind: "Session", Namespace: other, Name: "s-events"})
		elsewhere.EventTime, elsewhere.ReportingController, elsewhere.ReportingInstance, elsewhere.Action = metav1.NowMicro(), "breakglass.tower.dev/relay", "relay-0", "Grant"
		elsewhere.FirstTimestamp, elsewhere.LastTimestamp, elsewhere.Count = metav1.Time{}, metav1.Time{}, 0

		for _, tc := range []struct {
			name string
			err  func() error
			want string // "" means admitted
		}{
			{"the portal, about a Pod", func() error { return create(portal, coreEvent(ns, pod)) }, "[event.about-a-session] the plane records Events only about a Session"},
			{"the portal, about a ConfigMap", func() error {
				return create(portal, coreEvent(ns, corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "app"}))
			}, "[event.about-a-session]"},
			{"the portal, about a Session in another namespace", func() error { return create(portal, elsewhere) }, "[event.about-a-session]"},
			{"the portal, with a Pod as the related object", func() error { return create(portal, withRelated) }, "[event.related]"},
			{"the sweeper, about a Pod in the plane's namespace", func() error {
				return create(sweeper, coreEvent(v1alpha1.Namespace, corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: v1alpha1.Namespace, Name: "x"}))
			}, "[event.about-a-session]"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := tc.err(); tc.want == "" {
					wantAdmitted(t, err)
				} else {
					wantDenied(t, err, tc.want)
				}
			})
		}

		// RBAC gives the plane no events.k8s.io Events; were it widened by
		// mistake, the same fence holds there.
		t.Run("events.k8s.io, with RBAC widened by mistake", func(t *testing.T) {
			if err := createV1(portal, newEvent(ns, session)); !isForbiddenByRBAC(err) {
				t.Fatalf("at rest: want refused by RBAC, got %v", err)
			}
			widen(t, c, "identities-test:portal-events-v1", v1alpha1.PortalUsername, rbacv1.PolicyRule{
				APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}})
			wantAdmitted(t, createV1(portal, newEvent(ns, session)))
			wantDenied(t, createV1(portal, newEvent(ns, pod)), "[event.about-a-session]")
			wantDenied(t, createV1(portal, newEvent(v1alpha1.Namespace, session)), "[event.about-a-session]")
		})

		t.Run("the sweeper may not rewrite another component's Event", func(t *testing.T) {
			theirs, err := c.Kube.CoreV1().Events(v1alpha1.Namespace).Create(ctx,
				coreEvent(v1alpha1.Namespace, corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: v1alpha1.Namespace, Name: "x"}), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = c.Kube.CoreV1().Events(v1alpha1.Namespace).Delete(context.Background(), theirs.Name, metav1.DeleteOptions{})
			})
			patch := fmt.Sprintf(`{"involvedObject":{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","namespace":%q,"name":%q}}`,
				v1alpha1.Namespace, policies.SweeperLeaseName)
			_, err = sweeper.Kube.CoreV1().Events(v1alpha1.Namespace).Patch(ctx, theirs.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			wantDenied(t, err, "[event.update-own]")
		})

		t.Run("RBAC: neither the portal nor the sweeper patches an Event in an app's namespace", func(t *testing.T) {
			e := coreEvent(ns, session)
			e.Name = "s-events.patch"
			for who, u := range map[string]*cluster.User{"the portal": portal, "the sweeper": sweeper} {
				_, err := u.Kube.CoreV1().Events(ns).Patch(ctx, e.Name, types.MergePatchType, []byte(`{"count":2}`), metav1.PatchOptions{})
				if !isForbiddenByRBAC(err) {
					t.Fatalf("%s patching an Event: want refused by RBAC, got %v", who, err)
				}
			}
		})

		t.Run("the sweeper records its step on a Session, and nothing else, in an app's namespace", func(t *testing.T) {
			e := coreEvent(ns, session)
			e.Source.Component = v1alpha1.SweeperUsername
			if err := create(sweeper, e); err != nil {
				t.Fatalf("the sweeper's Event on a Session: %v", err)
			}
			wantDenied(t, create(sweeper, coreEvent(ns, pod)), "[event.about-a-session]")
		})
	})
}

// TestSweeperLeaseIsTheSweepers: client-go's leader election, the code the
// sweeper's manager runs, takes, renews and releases the sweeper's Lease as
// the sweeper and records its Event on the Lease; a cluster admin and
// another ServiceAccount of the plane's namespace that RBAC lets write
// Leases cannot touch it.
func TestSweeperLeaseIsTheSweepers(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ctx := testContext(t)
		sweeper := mustUser(t)(c.Sweeper())
		leases := func(u *cluster.User) *coordinationv1.Lease {
			t.Helper()
			l, err := u.Kube.CoordinationV1().Leases(v1alpha1.Namespace).Get(ctx, policies.SweeperLeaseName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}

		t.Run("the sweeper's leader election takes, renews and releases its Lease", func(t *testing.T) {
			broadcaster := record.NewBroadcaster()
			defer broadcaster.Shutdown()
			broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: sweeper.Kube.CoreV1().Events("")})
			identity := "identities-test_" + t.Name()
			lock, err := resourcelock.New(resourcelock.LeasesResourceLock, v1alpha1.Namespace, policies.SweeperLeaseName,
				sweeper.Kube.CoreV1(), sweeper.Kube.CoordinationV1(), resourcelock.ResourceLockConfig{
					Identity: identity, EventRecorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: identity})})
			if err != nil {
				t.Fatal(err)
			}
			leading := make(chan struct{})
			elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
				Lock: lock, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
				ReleaseOnCancel: true, Name: "breakglass-sweeper",
				Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) { close(leading) }, OnStoppedLeading: func() {}},
			})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { elector.Run(runCtx); close(done) }()
			defer func() { stop(); <-done }()
			select {
			case <-leading:
			case <-time.After(30 * time.Second):
				t.Fatal("the sweeper did not take its Lease within 30s")
			}
			first := leases(sweeper).Spec.RenewTime
			// The Event on the Lease, and a renewal.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				list, err := c.Kube.CoreV1().Events(v1alpha1.Namespace).List(ctx, metav1.ListOptions{
					FieldSelector: "involvedObject.kind=Lease,involvedObject.name=" + policies.SweeperLeaseName + ",reason=LeaderElection"})
				if err != nil {
					t.Fatal(err)
				}
				renewed := leases(sweeper).Spec.RenewTime
				if len(list.Items) > 0 && renewed != nil && first != nil && renewed.After(first.Time) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 30s: %d LeaderElection Events on the Lease, renewed %v (first %v)", len(list.Items), renewed, first)
				}
			}
			stop()
			<-done
			if h := leases(sweeper).Spec.HolderIdentity; h != nil && *h != "" {
				t.Fatalf("the released Lease is still held by %s", *h)
			}
		})

		admin := mustUser(t)(c.As("alice", "system:masters"))
		t.Run("a cluster admin may not hold the sweeper's Lease", func(t *testing.T) {
			l := leases(admin)
			l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To("alice"), ptr.To[int32](3600)
			wantDenied(t, admin.Client.Update(ctx, l, dryRun), "[lease.sweeper-only] the Lease breakglass-system/breakglass-sweeper elects the sweeper")
			wantDenied(t, admin.Client.Delete(ctx, leases(admin), dryRun), "[lease.sweeper-only]")
			// Taking it first: admission runs before the store would find it exists.
			first := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: policies.SweeperLeaseName, Namespace: v1alpha1.Namespace},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("alice"), LeaseDurationSeconds: ptr.To[int32](3600)}}
			wantDenied(t, admin.Client.Create(ctx, first, dryRun), "[lease.sweeper-only]")
		})

		t.Run("another ServiceAccount of the plane's namespace that may write Leases may not hold it", func(t *testing.T) {
			const name = "identities-lease-keeper"
			user := "system:serviceaccount:" + v1alpha1.Namespace + ":" + name
			objs := []client.Object{
				&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1alpha1.Namespace}},
				&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1alpha1.Namespace}, Rules: []rbacv1.PolicyRule{{
					APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update", "patch", "delete"}}}},
				&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1alpha1.Namespace},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
					Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: v1alpha1.Namespace}}},
			}
			for _, o := range objs {
				if err := c.Client.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Client.Delete(context.Background(), o) })
			}
			waitAllowed(t, c, user, authorizationv1.ResourceAttributes{Namespace: v1alpha1.Namespace, Verb: "update",
				Group: "coordination.k8s.io", Resource: "leases", Name: policies.SweeperLeaseName})
			keeper := mustUser(t)(c.AsServiceAccount(v1alpha1.Namespace, name))
			l := leases(keeper)
			l.Spec.HolderIdentity = ptr.To(name)
			wantDenied(t, keeper.Client.Update(ctx, l, dryRun), "[lease.sweeper-only]")
			_, err := keeper.Kube.CoordinationV1().Leases(v1alpha1.Namespace).Patch(ctx, policies.SweeperLeaseName, types.MergePatchType,
				[]byte(`{"spec":{"holderIdentity":"keeper","leaseDurationSeconds":3600}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			wantDenied(t, err, "[lease.sweeper-only]")
			// Its own Leases are no business of the fence.
			own := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1alpha1.Namespace},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name)}}
			wantAdmitted(t, keeper.Client.Create(ctx, own, dryRun))
		})

		t.Run("the portal, which writes its replicas' presence Leases, may not hold the sweeper's", func(t *testing.T) {
			portal := mustUser(t)(c.Portal())
			l := leases(portal)
			l.Spec.HolderIdentity = ptr.To("relay")
			wantDenied(t, portal.Client.Update(ctx, l, dryRun), "[lease.sweeper-only]")
			wantDenied(t, portal.Client.Delete(ctx, leases(portal), dryRun), "[lease.sweeper-only]")
			presence := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "breakglass-relay-r0", Namespace: v1alpha1.Namespace},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("r0")}}
			wantAdmitted(t, portal.Client.Create(ctx, presence, dryRun))
		})

		t.Run("the sweeper writes no other Lease", func(t *testing.T) {
			other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "relay-session-s1", Namespace: v1alpha1.Namespace},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("sweeper")}}
			wantDenied(t, sweeper.Client.Create(ctx, other, dryRun), "[lease.sweeper-own-lease]")
		})
	})
}

// TestIdentitiesAtRest asks the real authorizer (SubjectAccessReview) what
// each of the plane's identities holds with no session running.
func TestIdentitiesAtRest(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		webhookRoles(t, c)
		ns := namespace(t, c, "identities-at-rest")
		sys := v1alpha1.Namespace
		admission := "admissionregistration.k8s.io"
		coordination := "coordination.k8s.io"
		type can struct {
			what string
			attr authorizationv1.ResourceAttributes
			want bool
		}
		for _, id := range []struct {
			user  string
			cases []can
		}{
			{v1alpha1.WebhookUsername, []can{
				{"patch its configuration", authorizationv1.ResourceAttributes{Verb: "patch", Group: admission, Resource: "validatingwebhookconfigurations", Name: webhook.ConfigurationName}, true},
				{"read its configuration", authorizationv1.ResourceAttributes{Verb: "get", Group: admission, Resource: "validatingwebhookconfigurations", Name: webhook.ConfigurationName}, false},
				{"replace its configuration", authorizationv1.ResourceAttributes{Verb: "update", Group: admission, Resource: "validatingwebhookconfigurations", Name: webhook.ConfigurationName}, false},
				{"delete its configuration", authorizationv1.ResourceAttributes{Verb: "delete", Group: admission, Resource: "validatingwebhookconfigurations", Name: webhook.ConfigurationName}, false},
				{"create a webhook configuration", authorizationv1.ResourceAttributes{Verb: "create", Group: admission, Resource: "validatingwebhookconfigurations"}, false},
				{"patch another webhook configuration", authorizationv1.ResourceAttributes{Verb: "patch", Group: admission, Resource: "validatingwebhookconfigurations", Name: "other"}, false},
				{"create a mutating webhook", authorizationv1.ResourceAttributes{Verb: "create", Group: admission, Resource: "mutatingwebhookconfigurations"}, false},
				{"delete an admission policy", authorizationv1.ResourceAttributes{Verb: "delete", Group: admission, Resource: "validatingadmissionpolicies", Name: "breakglass-no-exec"}, false},
				{"read its Secret", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "get", Resource: "secrets", Name: manifests.WebhookSecretName}, true},
				{"update its Secret", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "update", Resource: "secrets", Name: manifests.WebhookSecretName}, true},
				{"create a Secret in the plane's namespace (the policy narrows it)", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "create", Resource: "secrets"}, true},
				{"delete its Secret", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "delete", Resource: "secrets", Name: manifests.WebhookSecretName}, false},
				{"read another Secret", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "get", Resource: "secrets", Name: "other"}, false},
				{"list Secrets", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "list", Resource: "secrets"}, false},
				{"create a Secret elsewhere", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "secrets"}, false},
				{"read a pod", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods"}, false},
				{"record an Event", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "create", Resource: "events"}, false},
			}},
			{v1alpha1.SweeperUsername, []can{
				{"create a pod", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}, false},
				{"exec", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec"}, false},
				{"attach", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "attach"}, false},
				{"add an ephemeral container", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Resource: "pods", Subresource: "ephemeralcontainers"}, false},
				{"recycle a pod (the policy narrows it)", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "delete", Resource: "pods"}, true},
				{"delete a grant (the policy narrows it)", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "delete", Group: rbacv1.GroupName, Resource: "rolebindings"}, true},
				{"create a RoleBinding", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: rbacv1.GroupName, Resource: "rolebindings"}, false},
				{"bind a debug role", authorizationv1.ResourceAttributes{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: v1alpha1.DebugRole}, false},
				{"change a Session's spec", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update", Group: v1alpha1.GroupVersion.Group, Resource: "sessions"}, false},
				{"read a Secret", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets"}, false},
				{"record an Event in an app's namespace (the events policies hold it to Sessions)", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "events"}, true},
				{"patch an Event in an app's namespace", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Resource: "events"}, false},
				{"record an Event in the plane's namespace", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "create", Resource: "events"}, true},
				{"create its Lease", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "create", Group: coordination, Resource: "leases"}, true},
				{"renew its Lease", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "update", Group: coordination, Resource: "leases", Name: policies.SweeperLeaseName}, true},
				{"update another Lease", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "update", Group: coordination, Resource: "leases", Name: "other"}, false},
				{"list Leases", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "list", Group: coordination, Resource: "leases"}, false},
				{"delete its Lease", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "delete", Group: coordination, Resource: "leases", Name: policies.SweeperLeaseName}, false},
				{"create a Lease elsewhere", authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "create", Group: coordination, Resource: "leases"}, false},
			}},
			{v1alpha1.PortalUsername, []can{
				{"read a pod", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods"}, false},
				{"list pods", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "pods"}, false},
				{"create a pod", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}, false},
				{"delete a pod", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "delete", Resource: "pods"}, false},
				{"attach", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "attach"}, false},
				{"exec", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec"}, false},
				{"add an ephemeral container", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Resource: "pods", Subresource: "ephemeralcontainers"}, false},
				{"record an Event (the policy narrows it)", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "events"}, true},
				{"patch an Event", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Resource: "events"}, false},
				{"record an Event through events.k8s.io", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "events.k8s.io", Resource: "events"}, false},
				// Its replicas' presence Leases (relay/live/presence.go); the
				// breakglass-sweeper-lease policy keeps it off the sweeper's.
				{"create its presence Lease", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "create", Group: coordination, Resource: "leases"}, true},
				{"watch the replicas' Leases", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "watch", Group: coordination, Resource: "leases"}, true},
				{"delete a lapsed replica's Lease", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "delete", Group: coordination, Resource: "leases", Name: "breakglass-relay-x"}, true},
				{"patch a Lease", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "patch", Group: coordination, Resource: "leases"}, false},
				{"create a Lease elsewhere", authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "create", Group: coordination, Resource: "leases"}, false},
				{"read a Secret", authorizationv1.ResourceAttributes{Namespace: sys, Verb: "get", Resource: "secrets"}, false},
				{"patch the webhook configuration", authorizationv1.ResourceAttributes{Verb: "patch", Group: admission, Resource: "validatingwebhookconfigurations", Name: webhook.ConfigurationName}, false},
			}},
		} {
			for _, tc := range id.cases {
				t.Run(id.user[len("system:serviceaccount:"+sys+":"):]+" may "+map[bool]string{true: "", false: "not "}[tc.want]+tc.what, func(t *testing.T) {
					if got := allowed(t, c, id.user, tc.attr); got != tc.want {
						t.Errorf("allowed = %v, want %v", got, tc.want)
					}
				})
			}
		}
	})
}
