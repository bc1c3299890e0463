package cluster

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// User is a client acting as someone else, through impersonation by the
// cluster admin: the API server authorizes and admits every request as that
// user, with real RBAC.
type User struct {
	Name   string
	Config *rest.Config
	Client client.Client
	Kube   kubernetes.Interface
}

// As returns clients that act as the user name in groups.
func (c *Cluster) As(name string, groups ...string) (*User, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: append(groups, "system:authenticated")}
	cl, err := client.New(cfg, client.Options{Scheme: c.Scheme})
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &User{Name: name, Config: cfg, Client: cl, Kube: kube}, nil
}

// AsServiceAccount returns clients that act as the ServiceAccount namespace/name.
func (c *Cluster) AsServiceAccount(namespace, name string) (*User, error) {
	return c.As("system:serviceaccount:"+namespace+":"+name, "system:serviceaccounts", "system:serviceaccounts:"+namespace)
}

// Portal returns clients that act as the portal's ServiceAccount.
func (c *Cluster) Portal() (*User, error) {
	return c.AsServiceAccount(v1alpha1.Namespace, v1alpha1.PortalServiceAccount)
}

// Sweeper returns clients that act as the sweeper's ServiceAccount.
func (c *Cluster) Sweeper() (*User, error) {
	return c.AsServiceAccount(v1alpha1.Namespace, v1alpha1.SweeperServiceAccount)
}

// WaitAllowed waits until the authorizer lets u do verb on resource (and
// subresource) in namespace. A new RoleBinding reaches the API server's RBAC
// cache a moment after it is created; a request made before then is refused.
func (u *User) WaitAllowed(ctx context.Context, namespace, verb, resource, subresource string) error {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: resource, Subresource: subresource},
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := u.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err == nil && got.Status.Allowed {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s may still not %s %s/%s in %s after 30s (last error: %w)", u.Name, verb, resource, subresource, namespace, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
