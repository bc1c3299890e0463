package sweeper_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/sweeper"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestPlaneDriftBackstop: what a Flight admin may change beside the fences,
// changed on the real API server as kubectl edit would. The sweeper,
// comparing the plane with what the chart rendered for the profile and
// params it was installed with, finds each within a minute (woken by the
// change; its schedule is an hour here): breakglass:debug widened with
// Secrets and exec, a policy's binding switched to Audit, a policy deleted.
// Each is counted (breakglass_plane_drift), audited and a Warning Event
// on the portal's account; put back, the count falls to 0.
func TestPlaneDriftBackstop(t *testing.T) {
	ctx := context.Background()
	var log cluster.SyncBuffer
	startSweeper(t, sweeper.Options{Profile: policies.Flight, Params: policies.DefaultParams(cluster.DebugImage), DriftEvery: time.Hour,
		StandingEvery: time.Hour, Audit: audit.NewLog(audit.Event{}, nil, &audit.Writer{W: &log})})
	drift := func() float64 { return gaugeValue("breakglass_plane_drift") }
	cluster.Eventually(t, 20*time.Second, "a first look finding the plane as rendered", func() (bool, error) { return drift() == 0, nil })

	// breakglass:debug widened: every later grant would carry it.
	role := &rbacv1.ClusterRole{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Name: v1alpha1.DebugRole}, role); err != nil {
		t.Fatal(err)
	}
	asRendered := role.DeepCopy()
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets", "pods/exec"}, Verbs: []string{"get", "create"}})
	if err := cl.Client.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	restore(t, asRendered)

	// A policy's binding set to Audit: its rule no longer refuses.
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Name: policies.NoExec().Name}, binding); err != nil {
		t.Fatal(err)
	}
	bindingAsRendered := binding.DeepCopy()
	binding.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	if err := cl.Client.Update(ctx, binding); err != nil {
		t.Fatal(err)
	}
	restore(t, bindingAsRendered)

	// A policy deleted outright.
	gone := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Name: policies.NodeAccess().Name}, gone); err != nil {
		t.Fatal(err)
	}
	if err := cl.Client.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gone.ResourceVersion, gone.UID = "", ""
		if err := cl.Client.Create(context.Background(), gone); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("putting the policy back: %v", err)
		}
	})

	cluster.Eventually(t, time.Minute, "three differences counted", func() (bool, error) { return drift() == 3, nil })
	for _, want := range []string{
		"ClusterRole " + v1alpha1.DebugRole + ": .rules",
		"ValidatingAdmissionPolicyBinding " + policies.NoExec().Name + ": .spec.validationActions",
		"ValidatingAdmissionPolicy " + policies.NodeAccess().Name + " is gone",
	} {
		cluster.Eventually(t, time.Minute, "the audit log saying "+want, func() (bool, error) {
			return strings.Contains(log.String(), `"kind":"plane-drift"`) && strings.Contains(log.String(), want), nil
		})
		requireDriftEvent(t, want)
	}

	// Put back as rendered (what a helm upgrade does): nothing differs.
	for _, o := range []client.Object{asRendered, bindingAsRendered} {
		putBack(t, o)
	}
	gone.ResourceVersion, gone.UID = "", ""
	if err := cl.Client.Create(ctx, gone.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, time.Minute, "nothing differs once it is put back", func() (bool, error) { return drift() == 0, nil })
}

// restore puts obj back as it is now when the test ends, however it ends.
func restore(t *testing.T, obj client.Object) {
	t.Helper()
	t.Cleanup(func() { putBack(t, obj) })
}

// putBack writes obj's spec over what stands now.
func putBack(t *testing.T, obj client.Object) {
	t.Helper()
	cur := obj.DeepCopyObject().(client.Object)
	if err := cl.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil {
		t.Errorf("reading %s: %v", obj.GetName(), err)
		return
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	if err := cl.Client.Update(context.Background(), obj); err != nil {
		t.Errorf("putting %s back: %v", obj.GetName(), err)
	}
}

// requireDriftEvent waits for a PlaneDrift Event on the portal's account that says want.
func requireDriftEvent(t *testing.T, want string) {
	t.Helper()
	cluster.Eventually(t, time.Minute, "an Event saying "+want, func() (bool, error) {
		var events corev1.EventList
		if err := cl.Client.List(context.Background(), &events, client.InNamespace(v1alpha1.Namespace)); err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == "PlaneDrift" && e.InvolvedObject.Name == v1alpha1.PortalServiceAccount && e.Type == corev1.EventTypeWarning &&
				strings.Contains(e.Message, want)
		}), nil
	})
}
