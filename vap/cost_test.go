package vap

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/tower-dev/breakglass/policies"
)

var testImage = "registry.example/breakglass/debug@sha256:" + strings.Repeat("d", 64)

// bigPod is a pod far larger than real ones: many containers, volumes,
// mounts and env vars, and many earlier debug containers. The debug
// container policy walks all of these.
func bigPod(ephemeral int) map[string]any {
	var containers, eph, volumes []any
	for i := 0; i < 60; i++ {
		v := map[string]any{"name": fmt.Sprintf("v%d", i), "configMap": map[string]any{"name": "c"}}
		if i%2 == 1 {
			v = map[string]any{"name": fmt.Sprintf("v%d", i), "secret": map[string]any{"secretName": "s"}}
		}
		volumes = append(volumes, v)
	}
	mounts := func() []any {
		var m []any
		for i := 0; i < 20; i++ {
			m = append(m, map[string]any{"name": fmt.Sprintf("v%d", 2*i), "mountPath": fmt.Sprintf("/m%d", i), "readOnly": true})
		}
		return m
	}
	env := func() []any {
		var e []any
		for i := 0; i < 30; i++ {
			e = append(e, map[string]any{"name": fmt.Sprintf("E%d", i), "value": "x"})
		}
		return e
	}
	for i := 0; i < 30; i++ {
		containers = append(containers, map[string]any{"name": fmt.Sprintf("app%d", i), "image": "registry.example/app:1", "env": env(), "volumeMounts": mounts()})
	}
	for i := 0; i < ephemeral; i++ {
		eph = append(eph, map[string]any{
			// No env: a debug container has none (debug.env).
			"name": fmt.Sprintf("breakglass-e%d", i), "image": testImage, "volumeMounts": mounts(), "stdin": true, "stdinOnce": true, "tty": true,
			"securityContext": map[string]any{
				"runAsUser": int64(65532), "runAsGroup": int64(65532), "runAsNonRoot": true, "readOnlyRootFilesystem": true,
				"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}},
				"seccompProfile": map[string]any{"type": "RuntimeDefault"},
			},
		})
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "big", "namespace": "shop", "labels": map[string]any{"app": "web"}},
		"spec":     map[string]any{"nodeName": "node-1", "containers": containers, "ephemeralContainers": eph, "volumes": volumes},
	}
}

// bigDebugRequest adds the 20th debug container to bigPod, as the portal.
func bigDebugRequest() Request {
	return Request{
		Operation: admissionregistrationv1.Update,
		Resource:  schema.GroupVersionResource{Version: "v1", Resource: "pods"}, SubResource: "ephemeralcontainers",
		Kind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "shop", Name: "big",
		Object: bigPod(20), OldObject: bigPod(19),
		User: &user.DefaultInfo{Name: "system:serviceaccount:breakglass-system:tower-breakglass", Extra: map[string][]string{policies.PodBoundExtra: {"tower-breakglass-0"}}},
	}
}

// TestExpressionCosts holds every expression, on every shipped case and on
// a pod far larger than real ones, under 1% of the API server's
// per-expression limit, counted by the API server's own cost tracker. The
// flat charge of an authorizer check comes on top: it is the API server's
// price for asking RBAC, paid once, only when process access is asked for.
func TestExpressionCosts(t *testing.T) {
	runner, err := NewRunner()
	if err != nil {
		t.Fatal(err)
	}
	files, err := LoadCaseDir("../policies/testdata")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	maxCost := map[string]int64{}
	check := func(where string, costs []ExpressionCost) {
		for _, c := range costs {
			key := fmt.Sprintf("%s[%d]", c.Policy, c.Validation)
			if c.Own() > maxCost[key] {
				maxCost[key] = c.Own()
			}
			if c.Own() >= CostLimit {
				t.Errorf("%s: %s costs %d (%d with authorizer checks), the limit is %d", where, key, c.Own(), c.Cost, CostLimit)
			}
			if c.Cost-c.Own() > AuthorizerCheckCost {
				t.Errorf("%s: %s asked the authorizer more than once", where, key)
			}
		}
	}
	for _, cf := range files {
		evaluators, err := runner.evaluators(cf)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cf.Cases {
			for _, p := range policies.Profiles {
				costs, err := evaluators[p].Costs(ctx, c.request())
				if err != nil {
					t.Fatal(err)
				}
				check(c.Name, costs)
			}
		}
	}
	evaluators, err := runner.evaluators(CaseFile{Params: map[string]any{"debugImages": []any{testImage}}})
	if err != nil {
		t.Fatal(err)
	}
	costs, err := evaluators[policies.Flight].Costs(ctx, bigDebugRequest())
	if err != nil {
		t.Fatal(err)
	}
	if len(costs) == 0 {
		t.Fatal("no policy evaluated the big pod")
	}
	check("big pod", costs)
	if res := evaluators[policies.Flight].Evaluate(ctx, bigDebugRequest()); !res.Allowed() {
		t.Fatalf("the big pod's compliant debug container was refused: %v", res.Denials)
	}
	var highest int64
	for _, v := range maxCost {
		highest = max(highest, v)
	}
	t.Logf("highest cost of any expression: %d (limit %d)", highest, CostLimit)
}
