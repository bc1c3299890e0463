package sessionobjects

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
)

// CopyPod is the pod a copy or held-copy session debugs. It is built to be
// what the copy policies admit whatever the target holds, and never a second
// production worker:
//   - it keeps the app's containers and images (pinned to the digests the
//     node ran), commands, plain and configMap env, emptyDir, configMap,
//     downwardAPI volumes and the app's claims (read-only), the node's own
//     resources (cpu, memory, ephemeral storage, huge pages), its node,
//     with the debug container beside them;
//   - it drops every credential (the ServiceAccount, its token, secret and
//     CSI volumes, secret and file env), everything of the node (hostPath,
//     host namespaces and ports, sysctls), init containers, probes and
//     lifecycle hooks, device claims, extended resources, the variables and
//     mount paths device hooks read (policies.DeviceEnv), the app's labels
//     (so no Service routes to it), annotations and priority class;
//   - every container runs restricted: non-root, no escalation, no
//     capability, the runtime's default seccomp profile. An app that runs as
//     root cannot be copied: use a live session.
//
// It lives for lifetime, its grant's TTL: the kubelet ends it then
// (activeDeadlineSeconds), whether or not the sweeper is there to delete
// it. A held copy's app containers sleep as the debug user instead of
// running their entrypoint, for as long, so a crash-looping app's
// filesystem can be inspected (through /proc/<pid>/root, with process
// access) without running it; the copy holds nothing the debug user should
// not read. The sleep is the debug image's, mounted read-only into each app
// container as an image volume (v1alpha1.HoldVolume): nothing inside the
// app's image is run, so distroless images are held too.
func CopyPod(target *corev1.Pod, s *v1alpha1.Session, container, image string, processAccess bool, lifetime time.Duration) (*corev1.Pod, error) {
	if rc := ptr.Deref(target.Spec.RuntimeClassName, ""); rc != "" {
		// A copy runs in the node's default runtime; leaving the pod's
		// sandbox behind would run the app with less around it.
		return nil, fmt.Errorf("pod %s runs in runtime class %s, and a copy runs only in the node's default runtime: use a live session", target.Name, rc)
	}
	held := s.Spec.Mode == v1alpha1.ModeHeldCopy
	kept := map[string]bool{}
	var volumes []corev1.Volume
	for _, v := range target.Spec.Volumes {
		if v, ok := copyVolume(v); ok {
			kept[v.Name] = true
			volumes = append(volumes, v)
		}
	}
	if held {
		volumes = append(volumes, corev1.Volume{Name: v1alpha1.HoldVolume, VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: image, PullPolicy: corev1.PullIfNotPresent}}})
	}
	spec := corev1.PodSpec{
		Volumes:                       volumes,
		NodeName:                      target.Spec.NodeName,
		Affinity:                      target.Spec.Affinity.DeepCopy(),
		DNSPolicy:                     target.Spec.DNSPolicy,
		DNSConfig:                     target.Spec.DNSConfig.DeepCopy(),
		AutomountServiceAccountToken:  ptr.To(false),
		EnableServiceLinks:            ptr.To(false),
		ShareProcessNamespace:         ptr.To(processAccess),
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr.To[int64](5),
		// The node ends the copy when its grant does, sweeper or not.
		ActiveDeadlineSeconds: ptr.To(int64(math.Ceil(lifetime.Seconds()))),
		SecurityContext:       copyPodSecurity(target.Spec.SecurityContext),
		ImagePullSecrets:      target.Spec.ImagePullSecrets,
	}
	for _, t := range target.Spec.Tolerations {
		// Tolerating every taint is what a copy may not do; the node's own
		// NoExecute taints still need the app's named tolerations.
		if t.Key != "" {
			spec.Tolerations = append(spec.Tolerations, t)
		}
	}
	for _, c := range target.Spec.Containers {
		pinned, err := pinnedImage(c.Image, c.Name, target.Status.ContainerStatuses)
		if err != nil {
			return nil, err
		}
		uid := containerUser(target, c)
		if held {
			uid = v1alpha1.DebugUserID
		}
		cc := corev1.Container{
			Name: c.Name, Image: pinned, Command: c.Command, Args: c.Args, WorkingDir: c.WorkingDir,
			Env: plainEnv(c.Env), EnvFrom: plainEnvFrom(c.EnvFrom), Resources: nodeResources(c.Resources), ImagePullPolicy: c.ImagePullPolicy,
			SecurityContext: restrictedIn(uid, target.Spec.SecurityContext),
			Stdin:           c.Stdin, TTY: c.TTY,
		}
		for _, m := range c.VolumeMounts {
			if kept[m.Name] && !policies.IsDeviceMount(m.MountPath) {
				// Bidirectional needs a privileged container, which no
				// copy has: the API server would refuse the copy.
				if m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationBidirectional {
					m.MountPropagation = nil
				}
				cc.VolumeMounts = append(cc.VolumeMounts, m)
			}
		}
		if held {
			cc.Command, cc.Args = []string{v1alpha1.HoldCommand, strconv.Itoa(int(lifetime.Seconds()))}, nil
			cc.VolumeMounts = append(cc.VolumeMounts, corev1.VolumeMount{Name: v1alpha1.HoldVolume, MountPath: v1alpha1.HoldMountPath, ReadOnly: true})
		}
		spec.Containers = append(spec.Containers, cc)
	}
	ec := DebugContainer(container, image)
	spec.Containers = append(spec.Containers, corev1.Container{
		Name: ec.Name, Image: ec.Image, Stdin: ec.Stdin, StdinOnce: ec.StdinOnce, TTY: ec.TTY, ImagePullPolicy: ec.ImagePullPolicy,
		TerminationMessagePolicy: ec.TerminationMessagePolicy, SecurityContext: ec.SecurityContext,
	})
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: container, Namespace: target.Namespace,
			Labels: map[string]string{v1alpha1.SessionLabel: s.Name},
		},
		Spec: spec,
	}, nil
}

// copyVolume is v as a copy may have it, or false when a copy may not have
// it at all: credentials and the node stay behind.
func copyVolume(v corev1.Volume) (corev1.Volume, bool) {
	src := v.VolumeSource
	switch {
	case src.EmptyDir != nil, src.ConfigMap != nil, src.DownwardAPI != nil:
		return v, true
	case src.PersistentVolumeClaim != nil:
		v = *v.DeepCopy()
		v.PersistentVolumeClaim.ReadOnly = true
		return v, true
	case src.Projected != nil:
		for _, p := range src.Projected.Sources {
			if !policies.SetsOnlyJudged("VolumeProjection", policies.InCopy, p) {
				return v, false // a token, a secret, a trust bundle, a key
			}
		}
		return v, true
	}
	return v, false
}

// copyPodSecurity keeps the pod-wide settings that only narrow what the
// app's processes may do, and never root: no user or group 0, and group 0
// left out of the groups every container gets (fsGroup, supplementalGroups).
func copyPodSecurity(sc *corev1.PodSecurityContext) *corev1.PodSecurityContext {
	if sc == nil {
		return nil
	}
	out := &corev1.PodSecurityContext{FSGroupChangePolicy: sc.FSGroupChangePolicy}
	for _, g := range sc.SupplementalGroups {
		if g != 0 {
			out.SupplementalGroups = append(out.SupplementalGroups, g)
		}
	}
	for _, f := range []struct{ from, to **int64 }{{&sc.RunAsUser, &out.RunAsUser}, {&sc.RunAsGroup, &out.RunAsGroup}, {&sc.FSGroup, &out.FSGroup}} {
		if *f.from != nil && **f.from != 0 {
			*f.to = *f.from
		}
	}
	return out
}

// restrictedIn is an app container's security context in a copy: the
// restricted profile, and, where the user is known, a group that is not 0
// (a user with no group of its own runs in group 0): the pod's, or the
// user's own id.
func restrictedIn(uid int64, psc *corev1.PodSecurityContext) *corev1.SecurityContext {
	sc := RestrictedSecurityContext(uid)
	if uid != 0 && (psc == nil || ptr.Deref(psc.RunAsGroup, 0) == 0) {
		sc.RunAsGroup = ptr.To(uid)
	}
	return sc
}

// containerUser is the user c runs as when the pod says so, or 0 for the
// image's own user (which runAsNonRoot then holds to non-root).
func containerUser(pod *corev1.Pod, c corev1.Container) int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return *c.SecurityContext.RunAsUser
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.RunAsUser != nil {
		return *sc.RunAsUser
	}
	return 0
}

// plainEnv is env with only the sources a copy may read (no secret, no
// file) and without the variables container runtimes read as a request
// for the node's devices.
func plainEnv(env []corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		if (e.ValueFrom == nil || policies.SetsOnlyJudged("EnvVarSource", policies.InCopy, e.ValueFrom)) && !policies.IsDeviceEnv(e.Name) {
			out = append(out, e)
		}
	}
	return out
}

func plainEnvFrom(from []corev1.EnvFromSource) []corev1.EnvFromSource {
	var out []corev1.EnvFromSource
	for _, f := range from {
		if policies.SetsOnlyJudged("EnvFromSource", policies.InCopy, f) && !policies.IsDevicePrefix(f.Prefix) {
			out = append(out, f)
		}
	}
	return out
}

// nodeResources is r with only the node's own resources: no device claim,
// no extended resource (a device plugin's devices).
func nodeResources(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	keep := func(l corev1.ResourceList) corev1.ResourceList {
		var out corev1.ResourceList
		for name, q := range l {
			if policies.IsNodeResource(name) {
				if out == nil {
					out = corev1.ResourceList{}
				}
				out[name] = q
			}
		}
		return out
	}
	return corev1.ResourceRequirements{Limits: keep(r.Limits), Requests: keep(r.Requests)}
}

// repoDigest is an image reference pinned by digest, as nodes report a
// container's imageID.
var repoDigest = regexp.MustCompile(`^[^@\s]+@(sha256:[a-f0-9]{64})$`)

// pinnedImage is the image container name runs, pinned to the digest its
// node reported: a copy runs what the pod ran, not what a tag says today.
func pinnedImage(image, name string, statuses []corev1.ContainerStatus) (string, error) {
	if strings.Contains(image, "@sha256:") {
		return image, nil
	}
	for _, st := range statuses {
		if st.Name != name {
			continue
		}
		m := repoDigest.FindStringSubmatch(strings.TrimPrefix(st.ImageID, "docker-pullable://"))
		if m == nil {
			break
		}
		repo := image
		if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
			repo = image[:i]
		}
		return repo + "@" + m[1], nil
	}
	return "", fmt.Errorf("container %s runs %s and its node reports no digest for it: a copy runs only pinned images; use a live session",
		name, image)
}
