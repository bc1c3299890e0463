package localplane

import (
	"context"
	"encoding/base64"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tower-dev/breakglass/localplane/cluster"
)

// backstageReader is the account Backstage's Kubernetes plugin lists pods
// with, as it does in a Backstage shop: read-only, pods only, no exec.
const backstageReader = "backstage-reader"

// kubernetesConfig is the Backstage config that points its Kubernetes
// plugin at every plane's API server, each with a read-only token of its
// own, under the plane's name: the relay's name for that cluster, so that
// the tab offers the pods of the cluster a session is asked on.
func kubernetesConfig(ctx context.Context, planes []*plane) (string, error) {
	out := "kubernetes:\n  clusterLocatorMethods:\n    - type: config\n      clusters:\n"
	for _, p := range planes {
		entry, err := readerAccount(ctx, p.name, p.c)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p.name, err)
		}
		out += entry
	}
	return out, nil
}

// readerAccount makes the read-only account on c and answers its cluster
// entry in the Kubernetes plugin's config.
func readerAccount(ctx context.Context, name string, c *cluster.Cluster) (string, error) {
	kube := c.Kube
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "backstage"}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: backstageReader, Namespace: ns.Name}}
	if _, err := kube.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: backstageReader},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: backstageReader},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: backstageReader},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: backstageReader, Namespace: ns.Name}}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	tok, err := kube.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, backstageReader,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](12 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`        - name: %s
          url: %s
          authProvider: serviceAccount
          serviceAccountToken: %s
          caData: %s
`, name, c.Config.Host, tok.Status.Token, base64.StdEncoding.EncodeToString(c.Config.CAData)), nil
}
