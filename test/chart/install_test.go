// Package chart_test installs the Helm chart into the real API server with
// Helm's Go SDK, as a cluster admin would, and checks that the policy plane
// it installs is in force, through an upgrade too.
package chart_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/prereq"
)

func chartDir() string {
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..", "charts", "breakglass")
}

func helmConfig(t *testing.T, c *cluster.Cluster) *action.Configuration {
	t.Helper()
	cfg := &action.Configuration{}
	if err := cfg.Init(restGetter{c: c, namespace: v1alpha1.Namespace}, v1alpha1.Namespace, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func values(t *testing.T, yaml string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValues([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestInstallAndUpgrade: helm install into an empty cluster, then the
// plane's checks: a wide grant, a long grant and a root debug container
// refused with the policies' words, a compliant grant and debug container
// admitted, an ordinary pod untouched. Then helm upgrade to new values while
// a prober keeps asking for a bad grant: refused every time, throughout.
func TestInstallAndUpgrade(t *testing.T) {
	prereq.Need(t, append(prereq.ControlPlane, prereq.Cosign, prereq.VersityGW)...)
	log.SetLogger(logr.Discard())
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{Empty: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	chrt, err := loader.Load(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	hc := helmConfig(t, c)
	install := action.NewInstall(hc)
	install.ReleaseName, install.Namespace, install.CreateNamespace = "breakglass", v1alpha1.Namespace, true
	install.Timeout = 2 * time.Minute
	// No node here, so no webhook pod to answer: it is off, and
	// realnode_test.go installs the whole chart, webhook included, on a
	// real node.
	rel, err := install.RunWithContext(ctx, chrt, values(t, fmt.Sprintf("params: {debugImages: [%q], protectedNamespaces: [payments]}\nwebhook: {enabled: false}\n", cluster.DebugImage)))
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	if rel.Info.Status != "deployed" {
		t.Fatalf("release %s", rel.Info.Status)
	}
	if err := c.WaitEnforced(ctx); err != nil {
		t.Fatal(err)
	}

	ns := c.Namespace(t, "shop")
	payments := c.Namespace(t, "payments")
	portal, err := c.Portal()
	if err != nil {
		t.Fatal(err)
	}
	admin, err := c.As("alice", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	bad := func(mutate func(*rbacv1.RoleBinding)) *rbacv1.RoleBinding {
		rb := cluster.ProbeGrant("s1", "30m")
		rb.Namespace = ns
		mutate(rb)
		return rb
	}
	for _, tc := range []struct {
		name string
		obj  client.Object
		want string
	}{
		{"two hours", bad(func(rb *rbacv1.RoleBinding) { rb.Labels[v1alpha1.TTLLabel] = "2h" }), "[grant.ttl]"},
		{"another subject", bad(func(rb *rbacv1.RoleBinding) { rb.Subjects[0].Name = "default" }), "[grant.subject]"},
		// The chart's protected namespaces, rendered into the binding at install.
		{"a protected namespace", bad(func(rb *rbacv1.RoleBinding) { rb.Namespace = payments }), "[grant.namespace] namespace payments is protected"},
		{"cluster-wide", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "debug-everywhere"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: v1alpha1.DebugRole},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "mallory"}}}, "[grant.cluster-wide]"},
	} {
		err := admin.Client.Create(ctx, tc.obj, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a refusal saying %s", tc.name, err, tc.want)
		}
	}
	good := bad(func(*rbacv1.RoleBinding) {})
	if err := admin.Client.Create(ctx, good); err != nil {
		t.Fatalf("a compliant grant: %v", err)
	}
	if err := portal.WaitAllowed(ctx, ns, "patch", "pods", "ephemeralcontainers"); err != nil {
		t.Fatal(err)
	}
	pod := c.AppPod(t, ns, "web-1")
	if pod.Name != "web-1" {
		t.Fatal("the ordinary pod was not created")
	}
	root := cluster.DebugContainer("breakglass-s1", cluster.DebugImage)
	root.SecurityContext.RunAsUser = ptr.To[int64](0)
	if err := portal.AddDebugContainer(ctx, ns, "web-1", root); err == nil || !strings.Contains(err.Error(), "[debug.user]") {
		t.Fatalf("a root debug container: %v", err)
	}
	if err := portal.AddDebugContainer(ctx, ns, "web-1", cluster.DebugContainer("breakglass-s1", cluster.DebugImage)); err != nil {
		t.Fatalf("a compliant debug container: %v", err)
	}

	// The upgrade: a second debug image, while a prober asks for a
	// two-hour grant (refused by a policy the upgrade renders again) as fast
	// as it can.
	var asked, admitted atomic.Int64
	stop := make(chan struct{})
	proberDone := make(chan struct{})
	go func() {
		defer close(proberDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			rb := bad(func(rb *rbacv1.RoleBinding) { rb.Labels[v1alpha1.TTLLabel] = "2h"; rb.Name = "breakglass-probe" })
			err := admin.Client.Create(ctx, rb, client.DryRunAll)
			asked.Add(1)
			if err == nil || (!apierrors.IsInvalid(err) && !apierrors.IsForbidden(err)) {
				admitted.Add(1)
			}
		}
	}()
	chrt.Metadata.Version = "0.1.1"
	upgrade := action.NewUpgrade(hc)
	upgrade.Namespace, upgrade.Timeout = v1alpha1.Namespace, 2*time.Minute
	second := "registry.example/breakglass/debug@sha256:" + strings.Repeat("e", 64)
	rel, err = upgrade.RunWithContext(ctx, "breakglass", chrt, values(t, fmt.Sprintf("params: {debugImages: [%q, %q]}\nwebhook: {enabled: false}\n", cluster.DebugImage, second)))
	if err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	// The new params reach the API server's informers a moment later.
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := &corev1.Pod{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-1"}, p); err != nil {
			t.Fatal(err)
		}
		err := portal.AddDebugContainer(ctx, ns, "web-1", cluster.DebugContainer("breakglass-s2", second))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upgraded params did not allow the second image: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	<-proberDone
	if rel.Version != 2 || asked.Load() == 0 || admitted.Load() != 0 {
		t.Fatalf("release v%d; during the upgrade %d of %d bad grants were admitted", rel.Version, admitted.Load(), asked.Load())
	}
	t.Logf("%d bad grants asked during the upgrade, all refused", asked.Load())
	// What the upgrade rendered is what the chart's Go twin renders for
	// those params: the tests that install the plane from Go install the
	// chart's policies.
	want, err := manifests.Plane(policies.Flight, policies.DefaultParams(cluster.DebugImage, second))
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, o := range want {
		if o.GetKind() != "ValidatingAdmissionPolicy" {
			continue
		}
		got := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: o.GetName()}, got); err != nil {
			t.Fatal(err)
		}
		vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "variables")
		if len(vars) != len(got.Spec.Variables) {
			t.Fatalf("%s: %d variables installed, %d rendered in Go", o.GetName(), len(got.Spec.Variables), len(vars))
		}
		for i, v := range vars {
			if e := v.(map[string]any)["expression"]; e != got.Spec.Variables[i].Expression {
				t.Errorf("%s: variable %s is %q installed, %q rendered in Go", o.GetName(), got.Spec.Variables[i].Name, got.Spec.Variables[i].Expression, e)
			}
		}
		compared++
	}
	if compared == 0 {
		t.Fatal("no policy compared")
	}
}
