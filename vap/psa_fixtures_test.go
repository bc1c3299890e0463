package vap_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
	"github.com/tower-dev/breakglass/vap"
)

// Upstream's own cases as a peer suite: the Pod Security Admission module
// ships, for every version, pods that the restricted profile refuses
// (test/testdata/restricted/<version>/fail) and pods it admits (pass).
// Each refused one is run through the policies as a copy and as the pod a
// debug container joins, and with its container's settings as the debug
// container's own; each admitted one, copied and debugged by the relay's
// own builders, must still be admitted. Upstream's checks are the oracle
// for what a copy may be; the debug container is held to notRestricted,
// which judges it as it will run.

// stricterThanRestricted are the admitted fixtures (by their check's
// name) that a copy refuses anyway, and why: the relay's own copy of each
// leaves the setting out and is admitted.
var stricterThanRestricted = map[string]string{
	"apparmorprofile":            "a copy runs the runtime's default AppArmor profile only, never a node's Localhost one",
	"seccompprofile_restricted":  "a copy runs the RuntimeDefault seccomp profile only, never a node's Localhost one",
	"capabilities_restricted":    "a copy adds no capability, NET_BIND_SERVICE included",
	"sysctls":                    "a copy sets no sysctl, the safe ones included",
	"restrictedvolumes":          "a copy has only emptyDir, configMap, downwardAPI and read-only claims: no writable claim, no ephemeral volume",
	"hostprobesandhostlifecycle": "a copy has no probe or lifecycle hook at all: the kubelet runs them from the node",
	"base_windows":               "a copy runs on Linux only",
}

// psaVersions are the Kubernetes versions the chart claims.
var psaVersions = []int{30, 31, 32, 33, 34, 35, 36, 37}

// psaFixtures is the fixtures' directory of the module in go.mod for
// level (restricted, baseline).
func psaFixtures(t *testing.T, level string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/pod-security-admission").Output()
	if err != nil {
		t.Fatalf("finding k8s.io/pod-security-admission's source (go list -m): %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "test", "testdata", level)
}

func readFixtures(t *testing.T, dir string) map[string]*corev1.Pod {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in %s: %v", dir, err)
	}
	pods := map[string]*corev1.Pod{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := &corev1.Pod{}
		if err := yaml.UnmarshalStrict(data, p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		pods[strings.TrimSuffix(filepath.Base(f), ".yaml")] = p
	}
	return pods
}

func sortedNames(m map[string]*corev1.Pod) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// asRunning is the fixture as a pod someone is called about: bound to its
// node, its containers' images reported by digest.
func asRunning(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.Namespace, p.Spec.NodeName = "shop", "node-1"
	for _, c := range append(append([]corev1.Container(nil), p.Spec.Containers...), p.Spec.InitContainers...) {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name,
			ImageID: c.Image + "@sha256:" + strings.Repeat("a", 64)})
	}
	return p
}

// asCopy is the fixture shaped as a copy in every way but what it tests:
// the session label, pinned images, no token, a deadline, the relay's debug
// container beside it, and its init containers as containers (a copy has
// none; their settings are what the fixture tests as much as the others').
func asCopy(p *corev1.Pod) *corev1.Pod {
	cp := asRunning(p)
	cp.Name, cp.Status = "breakglass-s1", corev1.PodStatus{}
	if cp.Labels == nil {
		cp.Labels = map[string]string{}
	}
	cp.Labels[v1alpha1.SessionLabel] = "s1"
	s := &cp.Spec
	s.AutomountServiceAccountToken, s.RestartPolicy, s.ActiveDeadlineSeconds = ptr.To(false), corev1.RestartPolicyNever, ptr.To[int64](1800)
	s.Containers = append(s.Containers, s.InitContainers...)
	s.InitContainers = nil
	for i := range s.Containers {
		s.Containers[i].Image = strings.SplitN(s.Containers[i].Image, "@", 2)[0] + "@sha256:" + strings.Repeat("a", 64)
	}
	ec := sessionobjects.DebugContainer("breakglass-s1", propertyDebugImage)
	s.Containers = append(s.Containers, corev1.Container(ec.EphemeralContainerCommon))
	return cp
}

// restrictedByUpstream says why upstream's restricted checks refuse pod,
// or "" when they admit it.
func restrictedByUpstream(t *testing.T, ev psapolicy.Evaluator, pod *corev1.Pod, minor int) string {
	t.Helper()
	res := psapolicy.AggregateCheckResults(ev.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted,
		Version: psaapi.MajorMinorVersion(1, minor)}, &pod.ObjectMeta, &pod.Spec))
	if res.Allowed {
		return ""
	}
	return res.ForbiddenReason() + ": " + res.ForbiddenDetail()
}

// withOwn is the relay's debug container with the settings the fixture's
// first container sets laid over its own.
func withOwn(ec corev1.EphemeralContainer, from corev1.Container) corev1.EphemeralContainer {
	if from.SecurityContext == nil {
		return ec
	}
	data, _ := json.Marshal(from.SecurityContext)
	ec = *ec.DeepCopy()
	_ = json.Unmarshal(data, ec.SecurityContext)
	return ec
}

// deniedBy reports whether policy is among those that refused.
func deniedBy(res vap.Result, policy string) bool {
	for _, d := range res.Denials {
		if d.Policy == policy {
			return true
		}
	}
	return false
}

// psaSuite runs the fixtures through plane and says what it got wrong,
// and how many fixtures of each kind it ran.
func psaSuite(t *testing.T, plane *propertyPlane) (problems []string, counts string) {
	t.Helper()
	dir := psaFixtures(t, "restricted")
	wrong := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	upstream, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := sessiontest.Make("shop", "s1").Mode(v1alpha1.ModeCopy).Obj()
	copyShape := policies.CopyPodShape().Name
	var failing, passing, debugAdmitted, stricter int
	for _, minor := range psaVersions {
		v := fmt.Sprintf("v1.%d", minor)
		fails := readFixtures(t, filepath.Join(dir, v, "fail"))
		passes := readFixtures(t, filepath.Join(dir, v, "pass"))
		for _, name := range sortedNames(fails) {
			fixture := fails[name]
			failing++
			// As a copy: refused by the copy's own shape, whatever of it
			// the fixture keeps (on Flight, breakglass-node-access refuses
			// some of them too, in any pod).
			if res := plane.createCopy(t, asCopy(fixture)); !deniedBy(res, copyShape) {
				wrong("%s fail/%s as a copy: not refused by %s (%v)", v, name, copyShape, res.Denials)
			}
			// As the pod a debug container joins: the relay refuses it
			// (LiveDebuggable), the cluster does, or the debug container
			// runs restricted all the same (what it inherits is not the
			// fixture's failing setting: that is another container's own,
			// or one the debug container sets for itself).
			target := asRunning(fixture)
			ec := sessionobjects.DebugContainer("breakglass-s1", propertyDebugImage)
			sessionobjects.ConfinedIn(ec.SecurityContext, target, ec.Name)
			pod := target.DeepCopy()
			pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, ec)
			if sessionobjects.LiveDebuggable(target) == nil && plane.addDebug(t, target, pod, nil).Allowed() {
				debugAdmitted++
				if why := notRestricted(pod, corev1.Container(ec.EphemeralContainerCommon), true); why != "" {
					wrong("%s fail/%s: the relay's debug container in it, admitted, runs with %s", v, name, why)
				}
			}
			// Its first container's settings as the debug container's own.
			own := withOwn(ec, fixture.Spec.Containers[0])
			pod.Spec.EphemeralContainers[len(pod.Spec.EphemeralContainers)-1] = own
			if why := notRestricted(pod, corev1.Container(own.EphemeralContainerCommon), true); why != "" && plane.addDebug(t, target, pod, nil).Allowed() {
				wrong("%s fail/%s: a debug container with its container's settings, running with %s, was admitted", v, name, why)
			}
		}
		for _, name := range sortedNames(passes) {
			passing++
			// Shaped as a copy as the refused ones are, an admitted one is
			// admitted too (so what refused those was what they test), but
			// where a copy is stricter than the restricted profile.
			if res := plane.createCopy(t, asCopy(passes[name])); !res.Allowed() {
				if _, ok := stricterThanRestricted[strings.TrimRight(name, "0123456789")]; !ok {
					wrong("%s pass/%s, shaped as a copy, was refused, and no reason a copy is stricter says why: %v", v, name, res.Denials)
				}
				stricter++
			}
			target := asRunning(passes[name])
			cp, err := sessionobjects.CopyPod(target, s, "breakglass-s1", propertyDebugImage, false, 30*time.Minute)
			if err != nil {
				wrong("%s pass/%s: the relay would not copy it: %v", v, name, err)
				continue
			}
			if res := plane.createCopy(t, cp); !res.Allowed() {
				wrong("%s pass/%s: the relay's copy of it was refused: %v", v, name, res.Denials)
			}
			if why := restrictedByUpstream(t, upstream, cp, minor); why != "" {
				wrong("%s pass/%s: the relay's copy of it, admitted, is not restricted by upstream's checks: %s", v, name, why)
			}
			ec := sessionobjects.DebugContainer("breakglass-s1", propertyDebugImage)
			sessionobjects.ConfinedIn(ec.SecurityContext, target, ec.Name)
			pod := target.DeepCopy()
			pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, ec)
			if res := plane.addDebug(t, target, pod, nil); !res.Allowed() {
				wrong("%s pass/%s: the relay's debug container in it was refused: %v", v, name, res.Denials)
			}
		}
	}
	counts = fmt.Sprintf("%d refused fixtures (each refused as a copy; %d took the relay's own debug container, restricted as it runs), "+
		"%d admitted ones copied and debugged (%d of them, shaped as a copy, refused where a copy is stricter)", failing, debugAdmitted, passing, stricter)
	return problems, counts
}

func TestPodSecurityFixtures(t *testing.T) {
	problems, counts := psaSuite(t, newPropertyPlane(t))
	for _, p := range problems {
		t.Error(p)
	}
	t.Log(counts)
}

// TestPodSecurityFixturesCatchLoosenedRules: with each rule that holds a
// restricted check weakened to always true, upstream's fixtures find a
// request the policies now get wrong.
func TestPodSecurityFixturesCatchLoosenedRules(t *testing.T) {
	for _, rule := range []string{"copy.app.privilege", "copy.app.capabilities", "copy.app.seccomp", "copy.app.non-root",
		"copy.pod-security", "debug.privilege", "debug.capabilities", "debug.seccomp", "debug.confinement", "debug.host-namespaces"} {
		t.Run(rule, func(t *testing.T) {
			if problems, _ := psaSuite(t, newWeakenedPlane(t, rule)); len(problems) == 0 {
				t.Errorf("with %s weakened, upstream's fixtures still find nothing wrong", rule)
			}
		})
	}
}
