package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests"
)

// copyOf is the pod a copy or held-copy session debugs: the target's spec
// with the debug container beside the app, labelled with the session only
// (so no Service routes traffic to it), on the target's node, without the
// app's API token, probes or owner. A held copy's app containers sleep
// instead of running their entrypoint, for as long as the session may last,
// so a crash-looping app can be looked at before it crashes.
func copyOf(target *corev1.Pod, s *v1alpha1.Session, container, image string, processAccess bool, hold time.Duration) *corev1.Pod {
	spec := target.Spec.DeepCopy()
	spec.EphemeralContainers = nil
	// The priority admission plugin sets it from the class again.
	spec.Priority = nil
	spec.AutomountServiceAccountToken = ptr.To(false)
	spec.ShareProcessNamespace = ptr.To(processAccess)
	spec.HostNetwork, spec.HostPID, spec.HostIPC = false, false, false
	spec.Hostname, spec.Subdomain = "", ""
	tokenVolumes := map[string]bool{}
	var volumes []corev1.Volume
	for _, v := range spec.Volumes {
		// The API server's projected token (kube-api-access-*): a copy holds
		// no credentials of the app's.
		if v.Projected != nil && strings.HasPrefix(v.Name, "kube-api-access-") {
			tokenVolumes[v.Name] = true
			continue
		}
		volumes = append(volumes, v)
	}
	spec.Volumes = volumes
	for i := range spec.Containers {
		c := &spec.Containers[i]
		c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil
		var mounts []corev1.VolumeMount
		for _, m := range c.VolumeMounts {
			if !tokenVolumes[m.Name] {
				mounts = append(mounts, m)
			}
		}
		c.VolumeMounts = mounts
		if s.Spec.Mode == v1alpha1.ModeHeldCopy {
			c.Command, c.Args = []string{"sleep", strconv.Itoa(int(hold.Seconds()))}, nil
		}
	}
	ec := manifests.DebugContainer(container, image)
	spec.Containers = append(spec.Containers, corev1.Container{
		Name: ec.Name, Image: ec.Image, Stdin: ec.Stdin, TTY: ec.TTY, ImagePullPolicy: ec.ImagePullPolicy,
		TerminationMessagePolicy: ec.TerminationMessagePolicy, SecurityContext: ec.SecurityContext,
	})
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: container, Namespace: target.Namespace,
			Labels: map[string]string{v1alpha1.SessionLabel: s.Name},
		},
		Spec: *spec,
	}
}

func (r *Runner) createCopy(ctx context.Context, s *v1alpha1.Session, container string, processAccess bool, hold time.Duration) error {
	target, err := r.Kube.CoreV1().Pods(s.Namespace).Get(ctx, s.Spec.TargetPod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the target pod: %w", err)
	}
	cp := copyOf(target, s, container, r.DebugImage, processAccess, hold)
	if _, err := r.Kube.CoreV1().Pods(s.Namespace).Create(ctx, cp, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the copy of %s: %w", target.Name, err)
	}
	return nil
}
