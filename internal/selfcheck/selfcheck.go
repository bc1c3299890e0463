// Package selfcheck is what `helm test` runs in the installed plane, as the
// portal's own ServiceAccount: that it holds nothing in an app namespace at
// rest, and that the cluster refuses a grant the policies forbid.
package selfcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/manifests/sessionobjects"
)

// Run checks, as the caller's identity (the portal's ServiceAccount in the
// chart's test pod), in namespace, that it may do none of
// sessionobjects.PortalProbes there before a grant, and that a grant past the
// TTL bound is refused; it says what it checked on w and returns every
// failure.
func Run(ctx context.Context, kube kubernetes.Interface, namespace string, w io.Writer) error {
	var errs []error
	for _, p := range sessionobjects.PortalProbes {
		ra := p.ResourceAttributes
		ra.Namespace = namespace
		what := p.String()
		review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &ra}}, metav1.CreateOptions{})
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("asking whether it may %s in %s: %w", what, namespace, err))
		case review.Status.Allowed:
			errs = append(errs, fmt.Errorf("it may %s in %s without a grant: something standing grants it", what, namespace))
		default:
			fmt.Fprintf(w, "ok: may not %s in %s at rest\n", what, namespace)
		}
	}
	// A grant past the TTL bound, dry run: the policies must refuse it.
	bad := sessionobjects.Grant(namespace, v1alpha1.GrantName("helm-test"), "helm-test", v1alpha1.DebugRole, "2h")
	_, err := kube.RbacV1().RoleBindings(namespace).Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case err == nil:
		errs = append(errs, fmt.Errorf("a two-hour grant in %s was admitted: the admission policies are not in force", namespace))
	case !strings.Contains(err.Error(), "[grant."):
		errs = append(errs, fmt.Errorf("a two-hour grant in %s was refused, but not by the grant policies: %w", namespace, err))
	default:
		fmt.Fprintf(w, "ok: a two-hour grant in %s is refused: %v\n", namespace, err)
	}
	return errors.Join(errs...)
}
