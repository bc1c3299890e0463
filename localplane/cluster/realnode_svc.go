package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tower-dev/breakglass/localplane/tools"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The node's Services and their names: kube-proxy (iptables mode) turns a
// Service's cluster IP into its endpoints, the `kubernetes` Service's too,
// and CoreDNS on the bridge answers cluster.local names from the API
// server, as a cluster's DNS add-on would. Both run on the host, like the
// kubelet, not as pods: the test bed has no add-on manager.
const (
	clusterDomain = "cluster.local"
	// kubeProxyUser is the user the API server's bootstrap policy binds to
	// system:node-proxier.
	kubeProxyUser = "system:kube-proxy"
	// coreDNSUser reads Services, their EndpointSlices and namespaces,
	// with coreDNSRole.
	coreDNSUser = "breakglass-test-coredns"
	coreDNSRole = "breakglass-test-coredns"
)

// serviceUsers are the kubeconfigs the node's Service programs use.
var serviceUsers = map[string]envtest.User{
	"kube-proxy": {Name: kubeProxyUser},
	"coredns":    {Name: coreDNSUser},
}

// startServices runs kube-proxy and CoreDNS, their health ports on
// loopback for waitServices.
func (n *realNode) startServices(ctx context.Context, c *Cluster) error {
	if err := allowCoreDNS(ctx, c); err != nil {
		return err
	}
	var err error
	if n.proxyHealthPort, err = FreePort(); err != nil {
		return err
	}
	metricsPort, err := FreePort()
	if err != nil {
		return err
	}
	// Zero conntrack settings leave the machine's sysctls alone, and no
	// NodePort on localhost leaves route_localnet alone: the test bed
	// changes no more of the host than its rules.
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %[1]s/kube-proxy.kubeconfig}
hostnameOverride: %[2]s
mode: iptables
clusterCIDR: %[3]s
healthzBindAddress: 127.0.0.1:%[4]d
metricsBindAddress: 127.0.0.1:%[5]d
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
`, n.dir, RealNodeName, podSubnet, n.proxyHealthPort, metricsPort)
	if err := os.WriteFile(n.path("kube-proxy.yaml"), []byte(config), 0o600); err != nil {
		return err
	}
	if err := n.run("kube-proxy", "--config="+n.path("kube-proxy.yaml")); err != nil {
		return err
	}
	if n.dnsReadyPort, err = FreePort(); err != nil {
		return err
	}
	// Names outside cluster.local are refused: nothing here leaves the
	// machine.
	corefile := fmt.Sprintf(`%[1]s:53 {
    bind %[2]s
    errors
    ready 127.0.0.1:%[3]d
    kubernetes %[1]s {
        kubeconfig %[4]s/coredns.kubeconfig
    }
    cache 5
}
`, clusterDomain, BridgeIP, n.dnsReadyPort, n.dir)
	if err := os.WriteFile(n.path("Corefile"), []byte(corefile), 0o600); err != nil {
		return err
	}
	return n.run("coredns", "-conf", n.path("Corefile"))
}

// allowCoreDNS gives CoreDNS's user what its kubernetes plugin watches.
func allowCoreDNS(ctx context.Context, c *Cluster) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: coreDNSRole}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}}
	if _, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: coreDNSRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: coreDNSRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: coreDNSUser}},
	}, metav1.CreateOptions{})
	return err
}

// servicesReady says what of kube-proxy and CoreDNS is not ready yet:
// kube-proxy is healthy once it has written the Services' rules, CoreDNS
// ready once it has read them.
func (n *realNode) servicesReady(ctx context.Context) string {
	for what, u := range map[string]string{
		"kube-proxy's rules": "http://127.0.0.1:" + strconv.Itoa(n.proxyHealthPort) + "/healthz",
		"CoreDNS":            "http://127.0.0.1:" + strconv.Itoa(n.dnsReadyPort) + "/ready",
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err.Error()
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return what + ": " + err.Error()
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return what + ": " + resp.Status
		}
	}
	return ""
}

// cleanUpProxyRules removes the chains and rules kube-proxy wrote, as its
// own --cleanup does, once it is stopped.
func cleanUpProxyRules() error {
	out, err := exec.Command(filepath.Join(tools.BinDir(), "kube-proxy"), "--cleanup").CombinedOutput()
	if err != nil {
		return fmt.Errorf("kube-proxy --cleanup: %w: %s", err, out)
	}
	return nil
}

// kubeletChains are the chains the kubelet makes (to see whether its rules
// were flushed, and to drop traffic to loopback from outside): left alone,
// they outlive the node.
var kubeletChains = []string{"KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT"}

// removeKubeletChains deletes the kubelet's chains, and the rules jumping
// to them, from every table of IPv4 and IPv6 that has them.
func removeKubeletChains() error {
	var errs []error
	for _, cmd := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, err := exec.Command(cmd, "-t", table, "-S").Output()
			if err != nil {
				continue // no such table, or no IPv6
			}
			var chains []string
			for _, line := range strings.Split(string(out), "\n") {
				f := strings.Fields(line)
				switch {
				case len(f) == 2 && f[0] == "-N" && slices.Contains(kubeletChains, f[1]):
					chains = append(chains, f[1])
				case len(f) > 2 && f[0] == "-A" && !slices.Contains(kubeletChains, f[1]) && slices.ContainsFunc(kubeletChains, func(c string) bool { return slices.Contains(f, c) }):
					if out, err := exec.Command(cmd, append([]string{"-t", table, "-D"}, f[1:]...)...).CombinedOutput(); err != nil {
						errs = append(errs, fmt.Errorf("%s -t %s -D %s: %w: %s", cmd, table, strings.Join(f[1:], " "), err, out))
					}
				}
			}
			for _, c := range chains {
				for _, op := range []string{"-F", "-X"} {
					if out, err := exec.Command(cmd, "-t", table, op, c).CombinedOutput(); err != nil {
						errs = append(errs, fmt.Errorf("%s -t %s %s %s: %w: %s", cmd, table, op, c, err, out))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}
