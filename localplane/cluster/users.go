package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/relay/debugsession"
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
	return c.as(rest.ImpersonationConfig{UserName: name, Groups: append(groups, "system:authenticated")})
}

func (c *Cluster) as(imp rest.ImpersonationConfig) (*User, error) {
	name := imp.UserName
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = imp
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

// AsServiceAccount returns clients that act as the ServiceAccount
// namespace/name through a pod of its own: with the user extra a pod's
// ServiceAccount token carries (the pod it is bound to), as the plane's
// servers run in the chart's pods. AsServiceAccountByName is the same
// account without it: an impersonator's or a client certificate's view.
func (c *Cluster) AsServiceAccount(namespace, name string) (*User, error) {
	return c.as(rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		Extra:  map[string][]string{policies.PodBoundExtra: {name + "-0"}}})
}

// AsServiceAccountByName acts as the ServiceAccount by its name and groups
// alone, with no pod's token.
func (c *Cluster) AsServiceAccountByName(namespace, name string) (*User, error) {
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
// subresource) in namespace, as the relay does after a grant.
func (u *User) WaitAllowed(ctx context.Context, namespace, verb, resource, subresource string) error {
	err := debugsession.WaitAllowed(ctx, u.Kube, authorizationv1.ResourceAttributes{
		Namespace: namespace, Verb: verb, Resource: resource, Subresource: subresource}, 30*time.Second)
	if err != nil {
		return fmt.Errorf("%s may still not %s %s/%s in %s after 30s: %w", u.Name, verb, resource, subresource, namespace, err)
	}
	return nil
}

// KubeConfig is the cluster admin's credentials as a kubeconfig whose
// cluster and context are called name, with namespace as the context's
// default: for kubectl and for tools (Helm) that take a kubeconfig rather
// than a rest.Config.
func (c *Cluster) KubeConfig(name, namespace string) clientcmdapi.Config {
	k := clientcmdapi.NewConfig()
	k.Clusters[name] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	k.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.Config.CertData, ClientKeyData: c.Config.KeyData, Token: c.Config.BearerToken}
	k.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "admin", Namespace: namespace}
	k.CurrentContext = name
	return *k
}

// FreePort is a loopback port nobody listens on right now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// AddDebugContainer adds ec to a pod as u, by the strategic-merge PATCH of
// pods/ephemeralcontainers that kubectl debug sends.
func (u *User) AddDebugContainer(ctx context.Context, ns, pod string, ec corev1.EphemeralContainer) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"ephemeralContainers": []corev1.EphemeralContainer{ec}}})
	if err != nil {
		return err
	}
	_, err = u.Kube.CoreV1().Pods(ns).Patch(ctx, pod, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "ephemeralcontainers")
	return err
}
