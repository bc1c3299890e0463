package debugsession

import (
	"context"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
)

// Recycle takes the debug container away at a session's end: a live
// session's pod carries it, so the pod is deleted (its controller makes a
// fresh one) unless the approver chose to keep it; a copy is always
// deleted, its original never touched. A pod already gone is no error.
func (r *Runner) Recycle(ctx context.Context, s *v1alpha1.Session) error {
	if s.KeepsPod() {
		return nil
	}
	err := r.Kube.CoreV1().Pods(s.Namespace).Delete(ctx, s.Status.DebugContainer.Pod, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Revoke deletes the grant name in ns; one already gone is no error.
func (r *Runner) Revoke(ctx context.Context, ns, name string) error {
	err := r.Client.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Regrant makes the grant of s's nth approved extension: role for ttl,
// replacing the grant standing now (which the caller revokes once the
// Session names the new one), and audits it.
func (r *Runner) Regrant(ctx context.Context, s *v1alpha1.Session, n int, role string, ttl time.Duration, replacing string) (*rbacv1.RoleBinding, error) {
	grant := sessionobjects.Grant(s.Namespace, v1alpha1.ExtensionGrantName(s.Name, n), s.Name, role, ttl.String())
	// One left from an approval whose status write failed is this
	// session's, made by this relay: replaced, so its TTL counts from now.
	if err := r.Revoke(ctx, grant.Namespace, grant.Name); err != nil {
		return nil, fmt.Errorf("clearing an earlier extension grant %s: %w", grant.Name, err)
	}
	if err := r.Client.Create(ctx, grant); err != nil {
		return nil, fmt.Errorf("granting the extension: %w", err)
	}
	if err := r.Note(ctx, v1alpha1.StepGrant, s, fmt.Sprintf("%s for %s, replacing %s at an extension", role, ttl, replacing)); err != nil {
		_ = r.Client.Delete(context.WithoutCancel(ctx), grant)
		return nil, fmt.Errorf("auditing the extension's grant: %w", err)
	}
	return grant, nil
}
