package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/cluster"
	"github.com/tower-dev/breakglass/test/harness/sessiontest"
)

// appImage is an app image as a node reports it: pinned by digest.
var appImage = "registry.example/shop/web@sha256:" + strings.Repeat("a", 64)

// richTarget is a production pod with everything a copy must not take along:
// a ServiceAccount and its token, secrets in volumes and env, a hostPath, an
// init container, a privileged sidecar on a host port, probes, the app's
// labels, a toleration of every taint and a system priority class.
func richTarget(ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"container.apparmor.security.beta.kubernetes.io/sidecar": "unconfined"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "payments",
			NodeName:           cluster.NodeName,
			HostNetwork:        true,
			PriorityClassName:  "system-node-critical",
			Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}, {Key: "dedicated", Value: "shop", Effect: corev1.TaintEffectNoSchedule}},
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000),
				Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}},
			InitContainers: []corev1.Container{{Name: "migrate", Image: appImage, Command: []string{"migrate"}}},
			Containers: []corev1.Container{
				{Name: "web", Image: "registry.example/shop/web:1.2", Command: []string{"sleep", "3600"},
					Env: []corev1.EnvVar{{Name: "MODE", Value: "prod"}, {Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{
						SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "pw"}}}},
					EnvFrom:        []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "api-keys"}}}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "tls", MountPath: "/tls"},
						{Name: "orders", MountPath: "/orders"}, {Name: "host", MountPath: "/host"}}},
				{Name: "sidecar", Image: appImage, Ports: []corev1.ContainerPort{{ContainerPort: 9000, HostPort: 9000}},
					SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true), Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}},
			},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls"}}},
				{Name: "orders", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "orders"}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run"}}},
				{Name: "kube-api-access-x1", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}},
			},
		},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "web", ImageID: "registry.example/shop/web@sha256:" + strings.Repeat("b", 64)},
			{Name: "sidecar", ImageID: appImage},
		}},
	}
}

// TestCopyBuilderAdmitted: the relay's copy of a pod that holds everything
// a copy must not have is admitted as it is built, in every mode, and none
// of what it dropped came along.
func TestCopyBuilderAdmitted(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "copy-builder")
		portal := mustUser(t)(c.Portal())
		grant(t, c, ns, "s-build", v1alpha1.DebugProcessRole)
		for _, mode := range []v1alpha1.SessionMode{v1alpha1.ModeCopy, v1alpha1.ModeHeldCopy} {
			for _, process := range []bool{false, true} {
				s := sessiontest.Make(ns, "s-build").Mode(mode).With(func(s *v1alpha1.Session) { s.Spec.ProcessAccess = process }).Obj()
				cp, err := sessionobjects.CopyPod(richTarget(ns), s, "breakglass-s-build", cluster.DebugImage, process, 30*time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				wantAdmitted(t, portal.Client.Create(testContext(t), cp, dryRun))
				if cp.Spec.Containers[0].Image != "registry.example/shop/web@sha256:"+strings.Repeat("b", 64) {
					t.Errorf("%s: the app's image is %s, not the digest its node ran", mode, cp.Spec.Containers[0].Image)
				}
				// The app's two harmless volumes, and a held copy's hold volume (the debug image).
				volumes := 2
				if mode == v1alpha1.ModeHeldCopy {
					volumes = 3
				}
				if len(cp.Spec.InitContainers) != 0 || cp.Spec.ServiceAccountName != "" || len(cp.Spec.Volumes) != volumes || len(cp.Spec.Containers[0].Env) != 1 {
					t.Errorf("%s: the copy kept what it must drop: %+v", mode, cp.Spec)
				}
			}
		}
	})
}

// TestCopyPodFence creates copy pods as the portal holding a grant: whatever
// a stolen portal token makes up, the copy holds no credential and nothing of
// the node, and runs restricted.
func TestCopyPodFence(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, "copy-fence")
		portal := mustUser(t)(c.Portal())
		grant(t, c, ns, "s-fence", v1alpha1.DebugRole)
		good, err := sessionobjects.CopyPod(richTarget(ns), sessiontest.Make(ns, "s-fence").Mode(v1alpha1.ModeCopy).Obj(), "breakglass-s-fence", cluster.DebugImage, false, 30*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		app := func(p *corev1.Pod) *corev1.Container { return &p.Spec.Containers[0] }
		// On Flight, breakglass-node-access refuses what reaches the node
		// too, and the API server names one refusal: the copy rule alone
		// is seen on Ground, and in vap's tests of each policy.
		for _, tc := range []struct {
			name   string
			mutate func(*corev1.Pod)
			want   string
		}{
			{name: "as built"},
			{name: "the app's ServiceAccount token", mutate: func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = nil }, want: "[copy.credentials]"},
			{name: "the app's ServiceAccount (cloud identity)", mutate: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "payments" }, want: "[copy.credentials]"},
			{name: "a secret volume", mutate: func(p *corev1.Pod) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls"}}})
			}, want: "[copy.volumes]"},
			{name: "a projected token", mutate: func(p *corev1.Pod) {
				p.Spec.ServiceAccountName = "default"
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "aws", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "sts.amazonaws.com"}}}}}})
			}, want: "[copy.volumes]"},
			{name: "a hostPath", mutate: func(p *corev1.Pod) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
			}, want: "[copy.volumes] | [node.host-path]"},
			{name: "the app's claim writable", mutate: func(p *corev1.Pod) {
				for i := range p.Spec.Volumes {
					if pvc := p.Spec.Volumes[i].PersistentVolumeClaim; pvc != nil {
						pvc.ReadOnly = false
					}
				}
			}, want: "[copy.volumes]"},
			{name: "a secret in env", mutate: func(p *corev1.Pod) {
				app(p).EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}
			}, want: "[copy.container-fields]"},
			{name: "a privileged app container", mutate: func(p *corev1.Pod) {
				app(p).SecurityContext.Privileged, app(p).SecurityContext.AllowPrivilegeEscalation = ptr.To(true), ptr.To(true)
			}, want: "[copy.app.privilege] | [node.privileged]"},
			{name: "an added capability", mutate: func(p *corev1.Pod) {
				app(p).SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
			}, want: "[copy.app.capabilities] | [node.capabilities]"},
			{name: "root", mutate: func(p *corev1.Pod) { app(p).SecurityContext.RunAsUser = ptr.To[int64](0) }, want: "[copy.app.non-root]"},
			{name: "seccomp unconfined", mutate: func(p *corev1.Pod) {
				app(p).SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
			}, want: "[copy.app.seccomp] | [node.confinement]"},
			{name: "a host port", mutate: func(p *corev1.Pod) { app(p).Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}} }, want: "[copy.app.host-ports] | [node.host-ports]"},
			{name: "the host's PID namespace", mutate: func(p *corev1.Pod) { p.Spec.HostPID = true }, want: "[copy.pod-security] | [node.host-namespaces]"},
			{name: "an init container", mutate: func(p *corev1.Pod) {
				c := *app(p)
				c.Name = "migrate"
				p.Spec.InitContainers = []corev1.Container{c}
			}, want: "[copy.no-init-containers]"},
			{name: "an image by tag", mutate: func(p *corev1.Pod) { app(p).Image = "registry.example/miner:latest" }, want: "[copy.images]"},
			{name: "every taint tolerated", mutate: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
			}, want: "[copy.placement]"},
			{name: "the app's labels", mutate: func(p *corev1.Pod) { p.Labels["app"] = "web" }, want: "[copy.no-app-labels]"},
			{name: "no session label", mutate: func(p *corev1.Pod) { p.Labels = nil }, want: "[copy.session-label] | [names.reserved]"},
			{name: "a probe the kubelet runs from the node", mutate: func(p *corev1.Pod) {
				app(p).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Host: "169.254.169.254", Path: "/latest/meta-data/", Port: intstr.FromInt32(80)}}}
			}, want: "[copy.hooks] | [node.probe-hosts]"},
			{name: "a cloud role annotation", mutate: func(p *corev1.Pod) {
				p.Annotations = map[string]string{"iam.amazonaws.com/role": "arn:aws:iam::1:role/shop-web"}
			}, want: "[copy.annotations]"},
			{name: "a shared process namespace without the process grant", mutate: func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr.To(true) },
				want: "[copy.process-access]"},
			{name: "a root debug container", mutate: func(p *corev1.Pod) { p.Spec.Containers[2].SecurityContext.RunAsUser = ptr.To[int64](0) },
				want: "[copy.user]"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := good.DeepCopy()
				if tc.mutate != nil {
					tc.mutate(p)
				}
				err := portal.Client.Create(testContext(t), p, dryRun)
				if tc.want == "" {
					wantAdmitted(t, err)
					return
				}
				wantDeniedByOneOf(t, err, strings.Split(tc.want, " | ")...)
			})
		}

		t.Run("the sweeper creates no pod, not even a well-formed copy", func(t *testing.T) {
			// RBAC refuses first; copy.portal-only is the second fence (policy tests).
			sweeper := mustUser(t)(c.Sweeper())
			if err := sweeper.Client.Create(testContext(t), good.DeepCopy(), dryRun); !isForbiddenByRBAC(err) {
				t.Fatalf("want RBAC to refuse the sweeper a pod, got %v", err)
			}
		})
		t.Run("another ServiceAccount of the plane's namespace is held to the copy shape", func(t *testing.T) {
			other := mustUser(t)(c.As("system:serviceaccount:breakglass-system:builder", "system:masters"))
			p := good.DeepCopy()
			app(p).SecurityContext.Privileged, app(p).SecurityContext.AllowPrivilegeEscalation = ptr.To(true), ptr.To(true)
			wantDeniedByOneOf(t, other.Client.Create(testContext(t), p, dryRun), "[copy.app.privilege]", "[node.privileged]")
		})
	})
}

// TestProcessReach adds debug containers to pods whose own spec reaches the
// app's processes: each needs the process grant, and the debug user must not
// be the app's.
func TestProcessReach(t *testing.T) {
	eachProfile(t, func(t *testing.T, _ policies.Profile, c *cluster.Cluster) {
		ns := namespace(t, c, reachNamespace)
		admin := mustUser(t)(c.As("alice", "system:masters"))
		portal := mustUser(t)(c.Portal())
		mk := func(name string, f func(*corev1.PodSpec)) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: corev1.PodSpec{NodeName: cluster.AppNodeName, Containers: []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.2"}},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
			f(&p.Spec)
			wantAdmitted(t, admin.Client.Create(testContext(t), p))
		}
		mk("shared", func(s *corev1.PodSpec) { s.ShareProcessNamespace = ptr.To(true) })
		mk("host-pid", func(s *corev1.PodSpec) { s.HostPID = true })
		mk("host-net", func(s *corev1.PodSpec) { s.HostNetwork = true })
		mk("host-path", func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run"}}})
		})
		mk("same-user", func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(v1alpha1.DebugUserID)}
		})
		mk("claim", func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "orders", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "orders"}}})
		})
		// Written with sources: [], stored with sources null: every rule
		// still evaluates (a rule that iterated null would refuse them all).
		mk("empty-projection", func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "empty", VolumeSource: corev1.VolumeSource{
				Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{}}}})
		})

		grant(t, c, ns, "s-reach", v1alpha1.DebugRole)
		hostMount := debugContainer("breakglass-hostpath")
		hostMount.VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host", ReadOnly: true}}
		claimMount := debugContainer("breakglass-claim")
		claimMount.VolumeMounts = []corev1.VolumeMount{{Name: "orders", MountPath: "/orders", ReadOnly: true}}
		for _, tc := range []struct {
			pod  string
			ec   corev1.EphemeralContainer
			want string
		}{
			{"shared", debugContainer("breakglass-shared"), "[debug.process-access]"},
			// The node's namespaces and paths are refused with any grant.
			{"host-pid", debugContainer("breakglass-hostpid"), "[debug.host-namespaces]"},
			{"host-net", debugContainer("breakglass-hostnet"), "[debug.host-namespaces]"},
			{"host-path", hostMount, "[debug.mounted-volumes]"},
			// A claim may be bound to a node's path or a secrets store.
			{"claim", claimMount, "[debug.mounted-volumes]"},
		} {
			t.Run(tc.pod+" without the process grant", func(t *testing.T) {
				wantDenied(t, addDebugContainer(t, portal, ns, tc.pod, tc.ec, true), tc.want)
			})
		}
		t.Run("a projection stored with sources null, mounted", func(t *testing.T) {
			ec := debugContainer("breakglass-empty")
			ec.VolumeMounts = append(ec.VolumeMounts, corev1.VolumeMount{Name: "empty", MountPath: "/empty", ReadOnly: true})
			wantAdmitted(t, addDebugContainer(t, portal, ns, "empty-projection", ec, true))
		})
		t.Run("an app running as the debug user, without process access", func(t *testing.T) {
			wantAdmitted(t, addDebugContainer(t, portal, ns, "same-user", debugContainer("breakglass-plain"), true))
		})

		grant(t, c, ns, "s-reach-process", v1alpha1.DebugProcessRole)
		t.Run("shared with the process grant", func(t *testing.T) {
			wantAdmitted(t, addDebugContainer(t, portal, ns, "shared", debugContainer("breakglass-shared2"), true))
		})
		t.Run("an app running as the debug user, with process access", func(t *testing.T) {
			ec := debugContainer("breakglass-same")
			ec.TargetContainerName = "web"
			wantDenied(t, addDebugContainer(t, portal, ns, "same-user", ec, true), "[debug.same-user] the app runs as user 65532")
		})
		t.Run("a seccomp-unconfined debug container", func(t *testing.T) {
			ec := debugContainer("breakglass-unconfined")
			ec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
			wantDenied(t, addDebugContainer(t, portal, ns, "shared", ec, true), "[debug.seccomp]")
		})
		t.Run("an SELinux role", func(t *testing.T) {
			ec := debugContainer("breakglass-selinux")
			ec.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Role: "sysadm_r"}
			wantDenied(t, addDebugContainer(t, portal, ns, "shared", ec, false), "[debug.confinement]")
		})
	})
}
