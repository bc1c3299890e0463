package integration

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
)

// TestRenderAppliesToAnEmptyCluster applies `policy render` output, in its
// order, to a control plane with nothing in it, and then the policies hold.
func TestRenderAppliesToAnEmptyCluster(t *testing.T) {
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{Empty: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	objs, err := manifests.All(policies.Flight, policies.DefaultParams(cluster.DebugImage))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := manifests.YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := manifests.Decode(stream)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range decoded {
		if err := c.Apply(ctx, o); err != nil {
			t.Fatal(err)
		}
		if o.GetKind() == "CustomResourceDefinition" {
			waitEstablished(t, c, o.GetName())
		}
	}
	if err := c.WaitEnforced(ctx); err != nil {
		t.Fatal(err)
	}
}

func waitEstablished(t *testing.T, c *cluster.Cluster, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRD %s not established after 30s", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
