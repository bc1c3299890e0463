package sweeper

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/lifecycle"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
)

// planeDrift is what the last look found changed in the plane's fences.
var planeDrift = prometheus.NewGauge(prometheus.GaugeOpts{Name: "breakglass_plane_drift",
	Help: "The plane's admission policies, their bindings and its roles that differ from what the chart rendered, or are gone, at the sweeper's last look (0: none)."})

// PlaneDrift is the backstop for what an admin changes beside the fences:
// admission policies never see their own kind, and RBAC lets an admin
// widen a role that every later grant then carries. On a schedule and at
// every change of the plane's policies, bindings and roles, it compares
// each with what the chart rendered for the same profile and params
// (manifests.Plane, the same files): a policy or binding gone, a binding
// switched from Deny to Audit or Warn or narrowed, a validation loosened,
// a role's rules widened. Each difference is counted
// (breakglass_plane_drift, alert BreakglassPlaneDrift), audited and
// recorded as a Warning Event on the portal's ServiceAccount (as standing
// rights are: what the fences hold is what the portal may do).
type PlaneDrift struct {
	Reader   client.Reader
	Kube     kubernetes.Interface
	Metadata metadata.Interface
	Clock    clock.WithTicker
	Audit    *audit.Log
	Every    time.Duration
	Profile  policies.Profile
	Params   policies.Params

	mu      sync.Mutex
	last    []string
	warning portalWarning
}

// NeedLeaderElection is true: one sweeper looks at a time.
func (d *PlaneDrift) NeedLeaderElection() bool { return true }

// driftResources are the kinds the backstop compares, and watches.
var driftResources = append([]schema.GroupVersionResource{
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
}, rbacResources...)

// compared is, for each kind, the fields that say what it does: its
// metadata (labels, the summary annotation) decides nothing.
var compared = map[string][]string{
	"ValidatingAdmissionPolicy":        {"spec"},
	"ValidatingAdmissionPolicyBinding": {"spec"},
	"ClusterRole":                      {"rules", "aggregationRule"},
	"Role":                             {"rules"},
	"ClusterRoleBinding":               {"roleRef", "subjects"},
	"RoleBinding":                      {"roleRef", "subjects"},
}

// Start looks at once, then on the schedule and at each change, until ctx ends.
func (d *PlaneDrift) Start(ctx context.Context) error {
	return lookOnChange(ctx, d.Metadata, driftResources, d.Clock, d.Every, d.Look)
}

// Last is what the last look found.
func (d *PlaneDrift) Last() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.last)
}

// Look compares the plane once and reports what differs.
func (d *PlaneDrift) Look(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("plane-drift")
	found, err := d.compare(ctx)
	if err != nil {
		logger.Error(err, "comparing the plane with what the chart rendered")
		return
	}
	planeDrift.Set(float64(len(found)))
	d.mu.Lock()
	d.last = found
	d.mu.Unlock()
	if len(found) > 0 {
		d.report(ctx, found)
	}
}

// compare lists what differs from the rendered plane, one line each.
func (d *PlaneDrift) compare(ctx context.Context) ([]string, error) {
	want, err := manifests.Plane(d.Profile, d.Params)
	if err != nil {
		return nil, err
	}
	live := map[string]*unstructured.Unstructured{}
	// One list per kind and namespace the plane has objects in: the
	// plane's Roles and RoleBindings are in its own namespace only.
	listed := map[string]bool{}
	var found []string
	for _, w := range want {
		gvk := w.GroupVersionKind()
		if _, ok := compared[gvk.Kind]; !ok || listed[gvk.Kind+"/"+w.GetNamespace()] {
			continue
		}
		listed[gvk.Kind+"/"+w.GetNamespace()] = true
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := d.Reader.List(ctx, list, client.InNamespace(w.GetNamespace())); err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			live[driftKey(gvk.Kind, o.GetNamespace(), o.GetName())] = o
		}
	}
	for _, w := range want {
		fields, ok := compared[w.GetKind()]
		if !ok {
			continue
		}
		key := driftKey(w.GetKind(), w.GetNamespace(), w.GetName())
		got, ok := live[key]
		if !ok {
			found = append(found, key+" is gone")
			continue
		}
		for _, f := range fields {
			if path := differs(w.Object[f], got.Object[f], "."+f); path != "" {
				found = append(found, key+": "+path+" differs from what the chart rendered")
			}
		}
	}
	// The chart-bound bindings are rendered from values the sweeper does
	// not hold: whatever they select, they deny.
	for _, p := range policies.All() {
		if !p.ChartBound || !p.In(d.Profile) {
			continue
		}
		if b, ok := live[driftKey("ValidatingAdmissionPolicyBinding", "", p.Name)]; ok {
			actions, _, _ := unstructured.NestedStringSlice(b.Object, "spec", "validationActions")
			if !slices.Equal(actions, []string{"Deny"}) {
				found = append(found, driftKey("ValidatingAdmissionPolicyBinding", "", p.Name)+": spec.validationActions is not [Deny]")
			}
		}
	}
	sort.Strings(found)
	return found, nil
}

func driftKey(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// apiDefaults are the values the API server fills in where the chart says
// nothing: a live field the rendered object lacks is drift unless it is
// empty or one of these.
var apiDefaults = map[string]any{"matchPolicy": "Equivalent", "scope": "*", "failurePolicy": "Fail"}

// differs is the path of the first difference between what the chart
// rendered (want) and what stands (got), or "": every field rendered must
// stand as rendered, and a field added only as the API server's default.
func differs(want, got any, path string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path
		}
		for k, wv := range w {
			if p := differs(wv, g[k], path+"."+k); p != "" {
				return p
			}
		}
		for k, gv := range g {
			if _, ok := w[k]; !ok && !isEmpty(gv) && !reflect.DeepEqual(apiDefaults[k], gv) {
				return path + "." + k
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path
		}
		for i := range w {
			if p := differs(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	case nil:
		if !isEmpty(got) {
			return path
		}
		return ""
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return path
		}
		return ""
	}
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	case string:
		return v == ""
	}
	return false
}

// report audits and records what the look found; the Event repeats only
// when it says something new, or after eventEvery.
func (d *PlaneDrift) report(ctx context.Context, found []string) {
	logger := log.FromContext(ctx).WithName("plane-drift")
	summary := someOf(found)
	logger.Info("plane drift", "summary", summary)
	now := d.Clock.Now()
	if !d.warning.due(summary, now) {
		return
	}
	m := &lifecycle.Machine{Writer: v1alpha1.WriterSweeper, Component: v1alpha1.SweeperUsername, Audit: d.Audit, Clock: d.Clock}
	if err := m.NotePlane(ctx, v1alpha1.StepPlaneDrift, v1alpha1.SweeperUsername, "", summary,
		map[string]string{"differences": fmt.Sprint(len(found))}); err != nil {
		logger.Error(err, "auditing plane drift")
	}
	if err := warnPortal(ctx, d.Kube, "PlaneDrift", "drift", summary, now); err != nil {
		logger.Error(err, "recording the plane-drift Event")
	}
}
