package vap_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/vap"
)

// Upstream's baseline fixtures as the peer suite of breakglass-node-access:
// on Flight, a pod that the baseline Pod Security Standard refuses is
// refused in an app namespace whoever creates it, a cluster admin
// included, and a pod it admits is admitted.

// stricterThanBaseline are the admitted fixtures (by their check's name)
// that node access refuses anyway, and why.
var stricterThanBaseline = map[string]string{
	"hostprobesandhostlifecycle": "a probe or hook naming a host is refused on every version, not only from 1.34, where upstream added the check",
	"procmount":                  "an unmasked /proc is refused on every version, in a user namespace of the pod's own too, which upstream admits from 1.35",
	"sysctls":                    "the sysctls of upstream's latest set are allowed on every version: an older kubelet refuses the newer ones as unsafe itself",
}

// createAsAdmin is pod, created in the app namespace shop by a cluster admin.
func (p *propertyPlane) createAsAdmin(t testing.TB, pod map[string]any) vap.Result {
	return p.ev.Evaluate(context.Background(), vap.Request{
		Operation: "CREATE", Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"},
		Kind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "shop", Name: "fixture",
		Object: pod, User: &user.DefaultInfo{Name: "alice", Groups: []string{user.SystemPrivilegedGroup}},
	})
}

// baselineSuite runs the baseline fixtures through plane and says what it
// got wrong.
func baselineSuite(t *testing.T, plane *propertyPlane) (problems []string, counts string) {
	t.Helper()
	dir := psaFixtures(t, "baseline")
	nodeAccess := policies.NodeAccess().Name
	var failing, passing, stricter int
	for _, minor := range psaVersions {
		v := fmt.Sprintf("v1.%d", minor)
		fails := readFixtures(t, filepath.Join(dir, v, "fail"))
		for _, name := range sortedNames(fails) {
			failing++
			if res := plane.createAsAdmin(t, toMap(t, fails[name])); !deniedBy(res, nodeAccess) {
				problems = append(problems, fmt.Sprintf("%s fail/%s, created by a cluster admin in an app namespace: not refused by %s (%v)", v, name, nodeAccess, res.Denials))
			}
		}
		passes := readFixtures(t, filepath.Join(dir, v, "pass"))
		for _, name := range sortedNames(passes) {
			passing++
			if res := plane.createAsAdmin(t, toMap(t, passes[name])); !res.Allowed() {
				if _, ok := stricterThanBaseline[strings.TrimRight(name, "0123456789")]; !ok {
					problems = append(problems, fmt.Sprintf("%s pass/%s was refused, and no reason node access is stricter says why: %v", v, name, res.Denials))
				}
				stricter++
			}
		}
	}
	return problems, fmt.Sprintf("%d refused fixtures refused, %d admitted ones admitted (%d refused where node access is stricter)", failing, passing-stricter, stricter)
}

func TestPodSecurityBaselineFixtures(t *testing.T) {
	problems, counts := baselineSuite(t, newPropertyPlane(t))
	for _, p := range problems {
		t.Error(p)
	}
	t.Log(counts)
}

// TestPodSecurityBaselineFixturesCatchLoosenedRules: with each of node
// access's rules weakened, upstream's fixtures find a pod it now admits.
func TestPodSecurityBaselineFixturesCatchLoosenedRules(t *testing.T) {
	// A Windows host process is on the node's network too (the API server
	// requires it), so node.host-namespaces refuses every such fixture:
	// policies/testdata/node-access.yaml holds node.host-process alone.
	alsoRefusedBy := map[string]string{"node.host-process": "node.host-namespaces"}
	for _, v := range policies.NodeAccess().Validations {
		t.Run(v.Name, func(t *testing.T) {
			if other, ok := alsoRefusedBy[v.Name]; ok {
				v.Name += "+" + other
			}
			if problems, _ := baselineSuite(t, newWeakenedPlane(t, v.Name)); len(problems) == 0 {
				t.Errorf("with %s weakened, upstream's fixtures still find nothing wrong", v.Name)
			}
		})
	}
}
