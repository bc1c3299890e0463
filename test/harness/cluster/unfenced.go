package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/policies"
)

// CreateUnfenced creates obj, a binding the no-standing policy refuses, as
// one made before the plane was installed (or while an admin had deleted
// its policies) would stand: the policy's binding is lifted for as long as
// it takes and put back, and the policy is in force again when it returns.
// What such a binding grants is the backstop's to find; the other fences
// must still hold.
func (c *Cluster) CreateUnfenced(t testing.TB, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	fence := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: policies.NoStandingPlaneBindings().Name}, fence); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Delete(ctx, fence); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		fence.ResourceVersion = ""
		if err := c.Client.Create(context.Background(), fence); err != nil {
			t.Errorf("putting the no-standing policy's binding back: %v", err)
		}
	}
	defer restore()
	// The API server drops the binding from its informer a moment later.
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = c.Client.Create(ctx, obj.DeepCopyObject().(client.Object)); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("creating %s with the fence lifted: %v", obj.GetName(), err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), obj) })
	restore()
	probe := obj.DeepCopyObject().(client.Object)
	probe.SetName(obj.GetName() + "-probe")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := c.Client.Create(ctx, probe, client.DryRunAll); err != nil && strings.Contains(err.Error(), "grant.no-") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the no-standing policy is not in force again after 20s")
		}
	}
}
