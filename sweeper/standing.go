package sweeper

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
	"github.com/tower-dev/breakglass/policies"
)

// standingRights is what the last look found: what the portal's account may
// do with no live grant giving it.
var standingRights = prometheus.NewGauge(prometheus.GaugeOpts{Name: "breakglass_portal_standing_rights",
	Help: "What the portal's account may do without a live grant, as the authorizer answered at the sweeper's last look (0: nothing)."})

// StandingRights is the backstop that measures the outcome, because
// admission cannot see everything (a binding made before the plane was
// installed or while its policies were deleted, a broad group, a widened
// role, an impersonated writer): on a schedule and at every RBAC change, it
// asks the real authorizer (SubjectAccessReview, as the portal's user and
// groups) whether the portal may do any of sessionobjects.PortalProbes in every
// namespace with a grant or a Session and in a sample of others, and
// cluster-wide. Anything allowed without a live grant giving it is counted
// (breakglass_portal_standing_rights), audited and recorded as an Event on
// the portal's ServiceAccount; a binding that names a plane account
// outright (not a grant, not the chart's own) is deleted, and one that
// reaches it through a broad group is named for an admin to remove.
type StandingRights struct {
	// Client reads the sweeper's cache (session grants, Sessions); Reader
	// the API server (every binding, when one must be named).
	Client client.Client
	Reader client.Reader
	Kube   kubernetes.Interface
	Clock  clock.WithTicker
	Audit  *audit.Log
	// Every is the schedule. Metadata watches the cluster's bindings and
	// roles (their metadata alone): every change starts a look.
	Every    time.Duration
	Metadata metadata.Interface
	// Sample are namespaces asked about besides those with a grant or a
	// Session: where a standing binding would most likely be made.
	Sample []string

	mu      sync.Mutex
	last    []Finding
	warning portalWarning
}

// Finding is one thing the portal may do without a grant giving it, and
// the bindings that give it, where the sweeper can tell.
type Finding struct {
	Namespace string // "" for cluster-wide
	Probe     sessionobjects.Probe
}

func (f Finding) String() string {
	if f.Namespace == "" {
		return f.Probe.String() + " cluster-wide"
	}
	return f.Probe.String() + " in " + f.Namespace
}

// NeedLeaderElection is true: one sweeper looks at a time.
func (s *StandingRights) NeedLeaderElection() bool { return true }

// rbacResources are what the backstop watches for changes.
var rbacResources = []schema.GroupVersionResource{
	rbacv1.SchemeGroupVersion.WithResource("rolebindings"), rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"),
	rbacv1.SchemeGroupVersion.WithResource("roles"), rbacv1.SchemeGroupVersion.WithResource("clusterroles"),
}

// Start looks at once, then on the schedule and at each RBAC change, until
// ctx ends.
func (s *StandingRights) Start(ctx context.Context) error {
	return lookOnChange(ctx, s.Metadata, rbacResources, s.Clock, s.Every, s.Look)
}

// Last is what the last look found.
func (s *StandingRights) Last() []Finding {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.last)
}

// confirmAfter is how long a finding must stand before it counts: longer
// than the API server's RBAC cache takes to see a grant deleted.
const confirmAfter = 2 * time.Second

// portalUser is the portal's account as the authorizer sees a request of its.
var portalUser = struct {
	name   string
	groups []string
}{v1alpha1.PortalUsername, []string{"system:serviceaccounts", "system:serviceaccounts:" + v1alpha1.Namespace, "system:authenticated"}}

// Look asks the authorizer once and acts on what it says.
func (s *StandingRights) Look(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("standing-rights")
	live, namespaces, err := s.liveGrants(ctx)
	if err != nil {
		logger.Error(err, "reading grants and Sessions; looking at the sample only")
	}
	// The plane's own namespace (its Secrets) and the cluster's, always.
	for _, ns := range append([]string{v1alpha1.Namespace, "kube-system"}, s.Sample...) {
		namespaces[ns] = true
	}
	// Bindings that name a plane account outright go, found or not.
	removed, removeErrs := s.removeNaming(ctx)
	var findings []Finding
	var errs []string
	ask := func(ns string, p sessionobjects.Probe) {
		ra := p.ResourceAttributes
		ra.Namespace = ns
		review, err := s.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: portalUser.name, Groups: portalUser.groups, ResourceAttributes: &ra}}, metav1.CreateOptions{})
		switch {
		case err != nil:
			errs = append(errs, err.Error())
		case review.Status.Allowed && (ns == "" || !p.Allows(live[ns])):
			findings = append(findings, Finding{Namespace: ns, Probe: p})
		}
	}
	for _, ns := range sortedKeys(namespaces) {
		for _, p := range sessionobjects.PortalProbes {
			ask(ns, p)
		}
	}
	for _, p := range sessionobjects.PortalClusterProbes {
		ask("", p)
	}
	if len(findings) > 0 {
		// The authorizer's cache lags a deleted grant by a moment: only what
		// it still allows a little later, with no grant giving it, counts.
		select {
		case <-ctx.Done():
			return
		case <-time.After(confirmAfter):
		}
		live, _, _ = s.liveGrants(ctx)
		again := findings
		findings = nil
		for _, f := range again {
			ask(f.Namespace, f.Probe)
		}
	}
	if len(errs) > 0 {
		logger.Error(fmt.Errorf("%s", errs[0]), "asking the authorizer", "failed", len(errs))
	}
	standingRights.Set(float64(len(findings)))
	s.mu.Lock()
	s.last = findings
	s.mu.Unlock()
	for _, err := range removeErrs {
		logger.Error(err, "deleting a standing binding")
	}
	if len(findings) == 0 && len(removed) == 0 {
		return
	}
	s.report(ctx, findings, removed)
}

// liveGrants are the namespaces with a live grant, each with its role, and
// every namespace with a session-labelled binding or a Session.
func (s *StandingRights) liveGrants(ctx context.Context) (live map[string]string, namespaces map[string]bool, err error) {
	live, namespaces = map[string]string{}, map[string]bool{}
	var grants rbacv1.RoleBindingList
	if err := s.Client.List(ctx, &grants); err != nil {
		return live, namespaces, err
	}
	now := s.Clock.Now()
	for _, rb := range grants.Items {
		namespaces[rb.Namespace] = true
		if role, ok := liveGrant(&rb, now); ok && live[rb.Namespace] != v1alpha1.DebugProcessRole {
			// Two grants in one namespace: the process one covers both.
			live[rb.Namespace] = role
		}
	}
	var sessions v1alpha1.SessionList
	if err := s.Client.List(ctx, &sessions); err != nil {
		return live, namespaces, err
	}
	for _, se := range sessions.Items {
		namespaces[se.Namespace] = true
	}
	return live, namespaces, nil
}

// liveGrant is the role a session grant gives, if rb is one that stands:
// a debug role bound to the portal alone (what GrantGuard admits), within
// its TTL, not being deleted. A grant past its TTL is standing rights too
// (and the grant sweeper's to end).
func liveGrant(rb *rbacv1.RoleBinding, now time.Time) (string, bool) {
	if !isSessionGrant(rb) || !rb.DeletionTimestamp.IsZero() {
		return "", false
	}
	if expiry, ok := GrantExpiry(rb); !ok || !now.Before(expiry) {
		return "", false
	}
	return rb.RoleRef.Name, true
}

// isSessionGrant is whether rb has a session grant's shape: the grant
// sweeper's to end, never the backstop's to delete.
func isSessionGrant(rb *rbacv1.RoleBinding) bool {
	_, labelled := rb.Labels[v1alpha1.SessionLabel]
	return labelled && rb.RoleRef.Kind == "ClusterRole" &&
		(rb.RoleRef.Name == v1alpha1.DebugRole || rb.RoleRef.Name == v1alpha1.DebugProcessRole) &&
		len(rb.Subjects) == 1 && rb.Subjects[0].Kind == rbacv1.ServiceAccountKind &&
		rb.Subjects[0].Name == v1alpha1.PortalServiceAccount && rb.Subjects[0].Namespace == v1alpha1.Namespace
}

// standing is what a binding gives the plane's accounts, as the backstop
// judges it: named outright (every subject a plane account: deleted; with
// others beside it: named, for the others' rights are not the plane's to
// take), or through a broad group bound beyond discovery (named).
type standing struct{ what, how string }

func judge(ns, name string, role rbacv1.RoleRef, subjects []rbacv1.Subject) (direct, mixed, broad bool) {
	if policies.IsChartBinding(ns, name, role, subjects) {
		return false, false, false
	}
	others := false
	for _, sub := range subjects {
		switch {
		case policies.NamesPlaneAccount(sub, ns):
			direct = true
		case policies.IsBroadGroup(sub):
			broad = broad || !policies.IsBootstrapDiscoveryRole(role)
		default:
			others = true
		}
	}
	return direct && !others, direct && others, broad
}

// removeNaming deletes every binding, cluster-wide, that names nothing but
// plane accounts and is neither a session grant nor the chart's own; it
// returns what it deleted and what it left (a binding that names others
// too, or a broad group) for report to name.
func (s *StandingRights) removeNaming(ctx context.Context) (found []standing, errs []error) {
	var crbs rbacv1.ClusterRoleBindingList
	if err := s.Reader.List(ctx, &crbs); err != nil {
		errs = append(errs, err)
	}
	var rbs rbacv1.RoleBindingList
	if err := s.Reader.List(ctx, &rbs); err != nil {
		errs = append(errs, err)
	}
	consider := func(obj client.Object, ns string, role rbacv1.RoleRef, subjects []rbacv1.Subject, what string) {
		direct, mixed, broad := judge(ns, obj.GetName(), role, subjects)
		switch {
		case direct:
			if err := s.remove(ctx, obj, what); err != nil {
				errs = append(errs, err)
				found = append(found, standing{what, "names a plane account; deleting it failed"})
			} else {
				found = append(found, standing{what, "deleted"})
			}
		case mixed:
			found = append(found, standing{what, "names a plane account beside others: remove the plane's subject"})
		case broad:
			found = append(found, standing{what, "binds a group every ServiceAccount is in: remove it"})
		}
	}
	for i := range crbs.Items {
		b := &crbs.Items[i]
		consider(b, "", b.RoleRef, b.Subjects, "ClusterRoleBinding "+b.Name)
	}
	for i := range rbs.Items {
		b := &rbs.Items[i]
		if !isSessionGrant(b) {
			consider(b, b.Namespace, b.RoleRef, b.Subjects, "RoleBinding "+b.Namespace+"/"+b.Name)
		}
	}
	return found, errs
}

// report audits and records what the look found. A broad binding is
// reported only with a finding; one deleted always. The Event repeats only
// when it says something new, or after eventEvery.
func (s *StandingRights) report(ctx context.Context, findings []Finding, bindings []standing) {
	logger := log.FromContext(ctx).WithName("standing-rights")
	var parts []string
	if len(findings) > 0 {
		var found []string
		for _, f := range findings {
			found = append(found, f.String())
		}
		parts = append(parts, fmt.Sprintf("the portal may %s without a live grant", someOf(found)))
	}
	var named []string
	for _, b := range bindings {
		if b.how == "deleted" || len(findings) > 0 {
			named = append(named, b.what+": "+b.how)
		}
	}
	if len(named) > 0 {
		parts = append(parts, strings.Join(first(named, 8), "; "))
	} else if len(findings) > 0 {
		parts = append(parts, "no binding names the portal or a broad group: look for a widened role (the plane's own or a bootstrap one)")
	}
	if len(parts) == 0 {
		return
	}
	summary := strings.Join(parts, "; ")
	logger.Info("standing rights", "summary", summary)
	if err := s.lifecycle().NotePlane(ctx, v1alpha1.StepStandingRights, v1alpha1.SweeperUsername, "", summary,
		map[string]string{"findings": fmt.Sprint(len(findings))}); err != nil {
		logger.Error(err, "auditing standing rights")
	}
	if now := s.Clock.Now(); s.warning.due(summary, now) {
		if err := warnPortal(ctx, s.Kube, "StandingRights", "standing", summary, now); err != nil {
			logger.Error(err, "recording the standing-rights Event")
		}
	}
}

// lifecycle audits the sweeper's findings as every step of the plane is.
func (s *StandingRights) lifecycle() *lifecycle.Machine {
	return &lifecycle.Machine{Writer: v1alpha1.WriterSweeper, Component: v1alpha1.SweeperUsername, Audit: s.Audit, Clock: s.Clock}
}

// remove deletes a binding that names a plane account, audited first (a
// failing audit sink does not keep standing rights standing: it is
// logged, as the grant sweeper's takeAway does). No session's: the
// binding is named in the reason.
func (s *StandingRights) remove(ctx context.Context, b client.Object, what string) error {
	if err := s.lifecycle().NotePlane(ctx, v1alpha1.StepRevoke, v1alpha1.SweeperUsername, "",
		what+" names a plane account: standing rights, deleted", nil); err != nil {
		log.FromContext(ctx).Error(err, "auditing the removal of standing rights; it goes ahead", "binding", what)
	}
	uid := b.GetUID()
	if err := s.Client.Delete(ctx, b, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", what, err)
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func first(xs []string, n int) []string { return xs[:min(n, len(xs))] }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
