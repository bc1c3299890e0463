package debugsession

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
)

// createCopy creates the pod a copy or held-copy session debugs, as
// sessionobjects.CopyPod builds it from the target as it runs now.
func (r *Runner) createCopy(ctx context.Context, s *v1alpha1.Session, container string, processAccess bool, lifetime time.Duration) error {
	if s.Spec.Mode == v1alpha1.ModeHeldCopy {
		if err := HeldCopies(r.Kube.Discovery()); err != nil {
			return err
		}
	}
	target, err := r.Kube.CoreV1().Pods(s.Namespace).Get(ctx, s.Spec.TargetPod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the target pod: %w", err)
	}
	cp, err := sessionobjects.CopyPod(target, s, container, r.DebugImage, processAccess, lifetime)
	if err != nil {
		return refusedStart{fmt.Errorf("copying %s: %w", target.Name, err)}
	}
	if _, err := r.Kube.CoreV1().Pods(s.Namespace).Create(ctx, cp, metav1.CreateOptions{}); err != nil {
		return refusedIfAdmission(fmt.Errorf("creating the copy of %s: %w", target.Name, err))
	}
	return nil
}
