package vap_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
	"github.com/tower-dev/breakglass/vap"
)

// The copy and debug-container policies can not see the pod a request is
// about to copy or debug, so these properties hold for any target: the
// relay's builders make what the policies admit, and whatever adds power to
// what they make is refused.

var propertyDebugImage = "registry.example/breakglass/debug@sha256:" + strings.Repeat("d", 64)

type propertyPlane struct {
	ev     *vap.Evaluator
	portal user.Info
}

func newPropertyPlane(t testing.TB) *propertyPlane { return newWeakenedPlane(t, "") }

// newWeakenedPlane is the Flight plane with the rule named weakened (its
// expression always true): what the property tests must then catch.
func newWeakenedPlane(t testing.TB, weakened string) *propertyPlane {
	t.Helper()
	pairs, err := vap.BuildAll(policies.Flight, policies.DefaultParams(propertyDebugImage))
	if err != nil {
		t.Fatal(err)
	}
	// weakened may name several rules, joined by "+", weakened together.
	for _, rule := range strings.Split(weakened, "+") {
		found := rule == ""
		for i := range pairs {
			for j, v := range pairs[i].Policy.Spec.Validations {
				if rule != "" && (strings.HasPrefix(v.Message, "["+rule+"]") || strings.HasPrefix(v.MessageExpression, "'["+rule+"]")) {
					pairs[i] = vap.Pair{Policy: pairs[i].Policy.DeepCopy(), Binding: pairs[i].Binding}
					pairs[i].Policy.Spec.Validations[j].Expression = "true"
					found = true
				}
			}
		}
		if !found {
			t.Fatalf("no rule %s to weaken", rule)
		}
	}
	return &propertyPlane{ev: vap.NewEvaluator(pairs),
		portal: &user.DefaultInfo{Name: v1alpha1.PortalUsername, Extra: map[string][]string{policies.PodBoundExtra: {"tower-breakglass-0"}}}}
}

// process is the permission the process grant holds in namespace shop.
var process = []vap.Permission{{Group: v1alpha1.GroupVersion.Group, Resource: v1alpha1.ProcessAccessResource,
	Namespace: "shop", Verb: v1alpha1.ProcessAccessVerb}}

func toMap(t testing.TB, pod *corev1.Pod) map[string]any {
	t.Helper()
	pod = pod.DeepCopy()
	pod.APIVersion, pod.Kind = "v1", "Pod"
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (p *propertyPlane) createCopy(t testing.TB, pod *corev1.Pod) vap.Result {
	return p.ev.Evaluate(context.Background(), vap.Request{
		Operation: "CREATE", Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"},
		Kind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "shop", Name: pod.Name,
		Object: toMap(t, pod), User: p.portal, Allowed: process,
	})
}

func (p *propertyPlane) addDebug(t testing.TB, old, pod *corev1.Pod, allowed []vap.Permission) vap.Result {
	return p.ev.Evaluate(context.Background(), vap.Request{
		Operation: "UPDATE", Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, SubResource: "ephemeralcontainers",
		Kind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "shop", Name: pod.Name,
		Object: toMap(t, pod), OldObject: toMap(t, old), User: p.portal, Allowed: allowed,
	})
}

// randomTarget is a production pod with a random share of everything a
// debug session must not inherit.
func randomTarget(r *rand.Rand) *corev1.Pod {
	pick := func(n int) bool { return r.IntN(n) == 0 }
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", Labels: map[string]string{"app": "web"}}}
	s := &pod.Spec
	s.NodeName = "node-1"
	if pick(2) {
		s.ServiceAccountName = "payments"
	}
	s.HostNetwork, s.HostPID, s.HostIPC = pick(5), pick(5), pick(5)
	s.ShareProcessNamespace = ptr.To(pick(3))
	if pick(3) {
		s.PriorityClassName = "system-node-critical"
	}
	if pick(3) {
		s.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}, {Key: "dedicated", Value: "shop"}}
	}
	users := []*int64{nil, ptr.To[int64](0), ptr.To[int64](1000), ptr.To(v1alpha1.DebugUserID)}
	if pick(2) {
		s.SecurityContext = randomPodSecurity(r, users)
	}
	if pick(8) {
		s.RuntimeClassName = ptr.To("runc-privileged")
	}
	if pick(4) {
		pod.Annotations = map[string]string{policies.AppArmorAnnotationPrefix + "app0": []string{"unconfined", "runtime/default", "localhost/x"}[r.IntN(3)]}
	}
	volumes := []corev1.VolumeSource{
		{EmptyDir: &corev1.EmptyDirVolumeSource{}},
		{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
		{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}},
		{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run"}},
		{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}},
		{CSI: &corev1.CSIVolumeSource{Driver: "secrets-store.csi.k8s.io"}},
		{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}},
		{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}}}}}},
		{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/mtls"}}}}},
		{NFS: &corev1.NFSVolumeSource{Server: "nfs.example", Path: "/"}},
		{Image: &corev1.ImageVolumeSource{Reference: "registry.example/keys:1"}},
		{Ephemeral: &corev1.EphemeralVolumeSource{}},
	}
	for i := range r.IntN(5) {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: fmt.Sprintf("v%d", i), VolumeSource: volumes[r.IntN(len(volumes))]})
	}
	container := func(name string) corev1.Container {
		c := corev1.Container{Name: name, Image: "registry.example/shop/" + name + ":1.2", Command: []string{"serve"}}
		if pick(2) {
			c.Image = "registry.example/shop/" + name + "@sha256:" + strings.Repeat("c", 64)
		}
		for _, v := range s.Volumes {
			if pick(2) {
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
			}
		}
		if pick(2) {
			c.Env = []corev1.EnvVar{{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "pw"}}}, {Name: "MODE", Value: "prod"}}
		}
		if pick(3) {
			c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "keys"}}}}
		}
		if pick(3) {
			c.Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
		}
		if pick(2) {
			c.SecurityContext = &corev1.SecurityContext{RunAsUser: users[r.IntN(len(users))], Privileged: ptr.To(pick(3)),
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
		}
		if pick(4) {
			c.Env = append(c.Env, corev1.EnvVar{Name: deviceEnvNames[r.IntN(len(deviceEnvNames))], Value: "all"})
		}
		if pick(4) {
			c.Env = append(c.Env, corev1.EnvVar{Name: "KEY", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{
				VolumeName: "v0", Path: "keys.env", Key: "KEY"}}})
		}
		if pick(4) && len(s.Volumes) > 0 {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: s.Volumes[0].Name, MountPath: "/var/run/nvidia-container-devices/all"})
		}
		if pick(3) {
			c.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), "nvidia.com/gpu": resource.MustParse("1")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), "hugepages-2Mi": resource.MustParse("4Mi"), "example.com/fpga": resource.MustParse("1")},
				Claims:   []corev1.ResourceClaim{{Name: "gpu"}},
			}
		}
		if pick(3) {
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}
		return c
	}
	for i := range 1 + r.IntN(3) {
		c := container(fmt.Sprintf("app%d", i))
		s.Containers = append(s.Containers, c)
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name,
			ImageID: "registry.example/shop/" + c.Name + "@sha256:" + strings.Repeat("e", 64)})
	}
	if pick(3) {
		s.InitContainers = []corev1.Container{container("migrate")}
	}
	return pod
}

// randomPodSecurity is a pod-level security context with a random share of
// every setting the kubelet hands to the containers that leave it unset, or
// gives every container whatever they set.
func randomPodSecurity(r *rand.Rand, users []*int64) *corev1.PodSecurityContext {
	pick := func(n int) bool { return r.IntN(n) == 0 }
	groups := []*int64{nil, ptr.To[int64](0), ptr.To[int64](1000), ptr.To(v1alpha1.DebugUserID)}
	sc := &corev1.PodSecurityContext{RunAsUser: users[r.IntN(len(users))], RunAsGroup: groups[r.IntN(len(groups))],
		FSGroup: []*int64{nil, ptr.To[int64](0), ptr.To[int64](2000)}[r.IntN(3)]}
	if pick(3) {
		sc.SupplementalGroups = [][]int64{{0}, {3000}, {3000, 0}}[r.IntN(3)]
	}
	if pick(3) {
		sc.RunAsNonRoot = ptr.To(pick(2))
	}
	if pick(3) {
		sc.SELinuxOptions = []*corev1.SELinuxOptions{{Type: "spc_t"}, {User: "system_u"}, {Type: "container_t", Level: "s0:c1,c2"}}[r.IntN(3)]
	}
	if pick(3) {
		sc.AppArmorProfile = []*corev1.AppArmorProfile{{Type: corev1.AppArmorProfileTypeUnconfined},
			{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("anything-goes")}, {Type: corev1.AppArmorProfileTypeRuntimeDefault}}[r.IntN(3)]
	}
	if pick(3) {
		sc.SeccompProfile = []*corev1.SeccompProfile{{Type: corev1.SeccompProfileTypeUnconfined}, {Type: corev1.SeccompProfileTypeRuntimeDefault},
			{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("allow-all.json")}}[r.IntN(3)]
	}
	if pick(10) {
		sc.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
	}
	if pick(3) {
		sc.Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}
	}
	return sc
}

// powers are mutations that each add power a copy or a debug container must
// not have. Each takes the pod and the index of one of its containers.
var powers = map[string]func(p *corev1.Pod, c *corev1.Container){
	"secret volume": func(p *corev1.Pod, c *corev1.Container) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "stolen", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "stolen", MountPath: "/s", ReadOnly: true})
	},
	"hostPath": func(p *corev1.Pod, c *corev1.Container) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "host", MountPath: "/host", ReadOnly: true})
	},
	"token": func(p *corev1.Pod, c *corev1.Container) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tok", MountPath: "/t", ReadOnly: true})
	},
	"secret env": func(_ *corev1.Pod, c *corev1.Container) {
		c.Env = append(c.Env, corev1.EnvVar{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "pw"}}})
	},
	"privileged": func(_ *corev1.Pod, c *corev1.Container) { c.SecurityContext.Privileged = ptr.To(true) },
	"escalation": func(_ *corev1.Pod, c *corev1.Container) { c.SecurityContext.AllowPrivilegeEscalation = ptr.To(true) },
	"capability": func(_ *corev1.Pod, c *corev1.Container) {
		c.SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_PTRACE"}
	},
	"root":       func(_ *corev1.Pod, c *corev1.Container) { c.SecurityContext.RunAsUser = ptr.To[int64](0) },
	"root group": func(_ *corev1.Pod, c *corev1.Container) { c.SecurityContext.RunAsGroup = ptr.To[int64](0) },
	"a device hook's mount path": func(p *corev1.Pod, c *corev1.Container) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "devreq", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "devreq", MountPath: "/var/run/nvidia-container-devices/all", ReadOnly: true})
	},
	"seccomp local": func(_ *corev1.Pod, c *corev1.Container) {
		c.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("allow-all.json")}
	},
	"AppArmor local": func(_ *corev1.Pod, c *corev1.Container) {
		c.SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("x")}
	},
	"SELinux spc_t": func(_ *corev1.Pod, c *corev1.Container) {
		c.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"}
	},
	// Unset only where the pod does not say it either: the pod's runAsNonRoot
	// is what the kubelet enforces then, and the policy rightly admits it.
	"not non-root": func(p *corev1.Pod, c *corev1.Container) {
		c.SecurityContext.RunAsNonRoot = nil
		if sc := p.Spec.SecurityContext; sc != nil && ptr.Deref(sc.RunAsNonRoot, false) {
			c.SecurityContext.RunAsNonRoot = ptr.To(false)
		}
	},
	"seccomp unconfined": func(_ *corev1.Pod, c *corev1.Container) {
		c.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
	},
	"unmasked proc": func(_ *corev1.Pod, c *corev1.Container) {
		c.SecurityContext.ProcMount = ptr.To(corev1.UnmaskedProcMount)
	},
	"SELinux user": func(_ *corev1.Pod, c *corev1.Container) {
		c.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{User: "system_u"}
	},
	"AppArmor unconfined": func(_ *corev1.Pod, c *corev1.Container) {
		c.SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	},
	"image by tag": func(_ *corev1.Pod, c *corev1.Container) { c.Image = "registry.example/miner:latest" },
}

// deviceEnvNames are a variable each device hook reads (policies.DeviceEnv).
var deviceEnvNames = func() []string {
	var out []string
	for _, d := range policies.DeviceEnv {
		name := d.Name
		if d.Match == policies.Prefix {
			name += "VISIBLE_DEVICES"
		}
		out = append(out, name)
	}
	return out
}()

func init() {
	for _, name := range deviceEnvNames {
		powers["device request "+name] = func(_ *corev1.Pod, c *corev1.Container) {
			c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: "all"})
		}
	}
}

// copyPowers add power to the whole of a copy pod.
var copyPowers = map[string]func(p *corev1.Pod){
	"the app's token":    func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(true) },
	"the app's identity": func(p *corev1.Pod) { p.Spec.ServiceAccountName = "payments" },
	"host network":       func(p *corev1.Pod) { p.Spec.HostNetwork = true },
	"host PID":           func(p *corev1.Pod) { p.Spec.HostPID = true },
	"fsGroup 0":          func(p *corev1.Pod) { podSecurity(p).FSGroup = ptr.To[int64](0) },
	"supplemental group 0": func(p *corev1.Pod) {
		podSecurity(p).SupplementalGroups = append(podSecurity(p).SupplementalGroups, 0)
	},
	"root group":    func(p *corev1.Pod) { podSecurity(p).RunAsGroup = ptr.To[int64](0) },
	"runtime class": func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr.To("runc-privileged") },
	"unconfined pod": func(p *corev1.Pod) {
		podSecurity(p).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	},
	"spc_t pod": func(p *corev1.Pod) { podSecurity(p).SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"} },
	"an init container": func(p *corev1.Pod) {
		c := *p.Spec.Containers[0].DeepCopy()
		c.Name = "init"
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	},
	"a host port": func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
	},
	"every taint": func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
	},
	"system priority": func(p *corev1.Pod) { p.Spec.PriorityClassName = "system-cluster-critical" },
	"a sysctl": func(p *corev1.Pod) {
		if p.Spec.SecurityContext == nil {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		}
		p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}
	},
	"the app's labels": func(p *corev1.Pod) { p.Labels["app"] = "web" },
	"a cloud role annotation": func(p *corev1.Pod) {
		p.Annotations = map[string]string{"iam.amazonaws.com/role": "arn:aws:iam::1:role/shop-web"}
	},
	"a probe the kubelet runs from the node": func(p *corev1.Pod) {
		p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Host: "169.254.169.254", Path: "/latest/meta-data/"}}}
	},
	"a device claim": func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu-0")}}
	},
	"an extended resource (a device plugin's)": func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	},
	"no deadline":                 func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
	"a deadline past every grant": func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](75*60 + 1) },
	"restarts":                    func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyAlways },
	"an hour to stop":             func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3600) },
	"a finalizer":                 func(p *corev1.Pod) { p.Finalizers = []string{"example.com/keep"} },
	"an owner": func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "1"}}
	},
	"a variable from a file": func(p *corev1.Pod) {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "KEY", ValueFrom: &corev1.EnvVarSource{
			FileKeyRef: &corev1.FileKeySelector{VolumeName: "x", Path: "k", Key: "KEY"}}})
	},
	"an eviction responder": func(p *corev1.Pod) {
		p.Spec.EvictionResponders = []corev1.EvictionResponder{{Name: "example.com/hold"}}
	},
	"a writable claim": func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "rw", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}})
	},
}

func podSecurity(p *corev1.Pod) *corev1.PodSecurityContext {
	if p.Spec.SecurityContext == nil {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	return p.Spec.SecurityContext
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	// Sorted, so a seed names one run exactly.
	sort.Strings(out)
	return out
}

// checkCopy: the relay's copy of a random target is admitted, or refused by
// the builder itself with a reason (never a half-made pod); one random
// power added to it is refused.
func checkCopy(t testing.TB, plane *propertyPlane, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 1))
	target := randomTarget(r)
	mode := []v1alpha1.SessionMode{v1alpha1.ModeCopy, v1alpha1.ModeHeldCopy}[r.IntN(2)]
	s := sessiontest.Make("shop", "s1").Mode(mode).Obj()
	processAccess := r.IntN(2) == 0
	cp, err := sessionobjects.CopyPod(target, s, "breakglass-s1", propertyDebugImage, processAccess, 30*time.Minute)
	if target.Spec.RuntimeClassName != nil {
		if err == nil || !strings.Contains(err.Error(), "runtime class") {
			return fmt.Errorf("seed %d: the builder copied a pod of another runtime class: %w", seed, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("seed %d: the builder refused a target whose node reported every digest: %w", seed, err)
	}
	if res := plane.createCopy(t, cp); !res.Allowed() {
		return fmt.Errorf("seed %d: the relay's %s of a random target was refused: %v", seed, mode, res.Denials)
	}
	for _, c := range cp.Spec.Containers {
		if why := notRestricted(cp, c, strings.HasPrefix(c.Name, v1alpha1.DebugContainerPrefix)); why != "" {
			return fmt.Errorf("seed %d: the copy's container %s, admitted, runs with %s", seed, c.Name, why)
		}
	}
	if why := outlivesOrReaches(cp); why != "" {
		return fmt.Errorf("seed %d: the copy, admitted, %s", seed, why)
	}
	names := keys(powers)
	name := names[r.IntN(len(names))]
	mutated := cp.DeepCopy()
	// Any container: the app's or the debug container.
	powers[name](mutated, &mutated.Spec.Containers[r.IntN(len(mutated.Spec.Containers))])
	if res := plane.createCopy(t, mutated); res.Allowed() {
		return fmt.Errorf("seed %d: a copy with %q added was admitted", seed, name)
	}
	whole := keys(copyPowers)
	name = whole[r.IntN(len(whole))]
	mutated = cp.DeepCopy()
	copyPowers[name](mutated)
	if res := plane.createCopy(t, mutated); res.Allowed() {
		return fmt.Errorf("seed %d: a copy with %q was admitted", seed, name)
	}
	return nil
}

// outlivesOrReaches says how an admitted copy could outlive its grant or
// reach the node's devices or a secret, spelled out here rather than
// taken from the policies' own lists: a kubelet deadline within the
// longest grant, no restart, a short stop, no finalizer or owner; only the
// node's own resources, no device claim, no device hook's variable or
// mount path, no secret or file variable.
func outlivesOrReaches(p *corev1.Pod) string {
	s := p.Spec
	switch {
	case s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds > 75*60:
		return fmt.Sprintf("runs until %v seconds, not within the longest grant", s.ActiveDeadlineSeconds)
	case s.RestartPolicy != corev1.RestartPolicyNever:
		return "restarts its containers"
	case ptr.Deref(s.TerminationGracePeriodSeconds, 30) > 30:
		return "takes more than 30 seconds to stop"
	case len(p.Finalizers) > 0 || len(p.OwnerReferences) > 0:
		return "has a finalizer or an owner"
	case len(s.ResourceClaims) > 0:
		return "claims a device"
	}
	for _, c := range s.Containers {
		for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for name := range l {
				if !slices.Contains([]corev1.ResourceName{"cpu", "memory", "ephemeral-storage"}, name) && !strings.HasPrefix(string(name), "hugepages-") {
					return fmt.Sprintf("asks for %s in %s", name, c.Name)
				}
			}
		}
		if len(c.Resources.Claims) > 0 {
			return "claims a device in " + c.Name
		}
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "NVIDIA_") || slices.Contains(deviceEnvNames, e.Name) {
				return fmt.Sprintf("sets %s in %s", e.Name, c.Name)
			}
			if e.ValueFrom != nil && (e.ValueFrom.SecretKeyRef != nil || e.ValueFrom.FileKeyRef != nil) {
				return fmt.Sprintf("reads %s from a secret or a file in %s", e.Name, c.Name)
			}
		}
		for _, m := range c.VolumeMounts {
			if strings.Contains(m.MountPath, "nvidia-container-devices") {
				return fmt.Sprintf("mounts %s in %s", m.MountPath, c.Name)
			}
		}
	}
	return ""
}

// runsAsDebugUser: the app declares the debug user as its own, in the pod
// or in any of its containers, init containers (sidecars) included.
func runsAsDebugUser(p *corev1.Pod) bool {
	if sc := p.Spec.SecurityContext; sc != nil && ptr.Deref(sc.RunAsUser, -1) == v1alpha1.DebugUserID {
		return true
	}
	for _, c := range append(append([]corev1.Container(nil), p.Spec.Containers...), p.Spec.InitContainers...) {
		if c.SecurityContext != nil && ptr.Deref(c.SecurityContext.RunAsUser, -1) == v1alpha1.DebugUserID {
			return true
		}
	}
	return false
}

// checkDebug: the relay's debug container on a random target, with or
// without process access, is admitted exactly when what it reaches was
// approved and it would not see the app's processes as the app's own user;
// one random power added to an admitted one is refused.
func checkDebug(t testing.TB, plane *propertyPlane, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 2))
	target := randomTarget(r)
	ec := sessionobjects.DebugContainer("breakglass-s1", propertyDebugImage)
	// As the relay builds it for this pod (Runner.addDebugContainerTo).
	unfit := sessionobjects.LiveDebuggable(target)
	sessionobjects.ConfinedIn(ec.SecurityContext, target, ec.Name)
	processAccess := r.IntN(2) == 0
	var allowed []vap.Permission
	if processAccess {
		ec.TargetContainerName = target.Spec.Containers[0].Name
		allowed = process
	}
	pod := target.DeepCopy()
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, ec)
	res := plane.addDebug(t, target, pod, allowed)
	reach := processAccess || ptr.Deref(target.Spec.ShareProcessNamespace, false)
	// A runtime class only params.runtimeClasses could allow (it lists none here).
	want := unfit == nil && target.Spec.RuntimeClassName == nil && (!reach || processAccess) && (!reach || !runsAsDebugUser(target))
	if res.Allowed() != want {
		return fmt.Errorf("seed %d: the relay's debug container (process access %t, unfit: %w): admitted %t, want %t: %v", seed, processAccess, unfit, res.Allowed(), want, res.Denials)
	}
	if !want {
		return nil
	}
	if why := notRestricted(pod, corev1.Container(ec.EphemeralContainerCommon), true); why != "" {
		return fmt.Errorf("seed %d: the relay's debug container, admitted, runs with %s", seed, why)
	}
	names := keys(powers)
	name := names[r.IntN(len(names))]
	mutated := pod.DeepCopy()
	last := &mutated.Spec.EphemeralContainers[len(mutated.Spec.EphemeralContainers)-1]
	c := corev1.Container(last.EphemeralContainerCommon)
	powers[name](mutated, &c)
	last.EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
	if res := plane.addDebug(t, target, mutated, allowed); res.Allowed() {
		return fmt.Errorf("seed %d: a debug container with %q added was admitted", seed, name)
	}
	return nil
}

// TestCopyAndDebugProperties runs the properties on 200 random targets each.
func TestCopyAndDebugProperties(t *testing.T) {
	plane := newPropertyPlane(t)
	for seed := range uint64(200) {
		if err := errors.Join(checkCopy(t, plane, seed), checkDebug(t, plane, seed)); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzCopyAndDebug lets `go test -fuzz FuzzCopyAndDebug ./vap` search seeds
// beyond the 200 the test runs.
func FuzzCopyAndDebug(f *testing.F) {
	plane := newPropertyPlane(f)
	for seed := range uint64(8) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		if err := errors.Join(checkCopy(t, plane, seed), checkDebug(t, plane, seed)); err != nil {
			t.Fatal(err)
		}
	})
}
