package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// The real node's pod network: a bridge of its own with a private address
// on this machine only. Pods get addresses on it (the bridge CNI plugin with
// host-local addresses); the host reaches them there, and they reach the
// host's servers (the API server, the registry, and whatever a test serves
// to pods: S3, Rekor, the OIDC issuer) at BridgeIP, and Services through
// kube-proxy's rules, their names through CoreDNS at BridgeIP
// (realnode_svc.go). Nothing leaves the machine: the bridge has no other
// port, and nothing masquerades out of it.
const (
	// BridgeIP is the host's address on the pod network: the node's
	// InternalIP, and where servers for pods listen.
	BridgeIP   = "10.244.7.1"
	podSubnet  = "10.244.7.0/24"
	bridgeName = "breakglass0"
	// KubernetesServiceIP is the `kubernetes` Service's cluster IP (the
	// first of envtest's 10.0.0.0/24), which pods' in-cluster
	// configuration dials; the API server's certificate names it.
	KubernetesServiceIP = "10.0.0.1"
	// ruleComment marked the DNAT rule earlier versions of this test bed
	// added in kube-proxy's stead.
	ruleComment = "breakglass-real-node"
)

type podNetwork struct {
	dir string
}

// setUpPodNetwork makes the bridge with the host's address (the CNI plugin
// takes an existing bridge as it is) and the CNI configuration.
func setUpPodNetwork(dir string) (*podNetwork, error) {
	p := &podNetwork{dir: dir}
	// A bridge, or a forwarding rule an earlier version of the test bed
	// left behind when killed, is this test bed's own; such a rule would
	// send the pods to a gone API server.
	_ = exec.Command("ip", "link", "del", bridgeName).Run()
	if err := deleteStaleRules(); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", BridgeIP + "/24", "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			_ = p.tearDown()
			return nil, fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	conf := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "breakglass", "plugins": [
  {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q, "gateway": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
`, bridgeName, filepath.Join(dir, "cni-ipam"), podSubnet, BridgeIP)
	if err := os.MkdirAll(filepath.Join(dir, "cni"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cni", "10-breakglass.conflist"), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

// deleteStaleRules deletes the forwarding rules carrying this test bed's
// comment, as `iptables -S` lists them.
func deleteStaleRules() error {
	out, err := exec.Command("iptables", "-t", "nat", "-S", "PREROUTING").CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables -S: %w: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "-A ") || !strings.Contains(line, ruleComment) {
			continue
		}
		args := append([]string{"-t", "nat", "-D"}, strings.Fields(strings.TrimPrefix(line, "-A "))...)
		if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables: deleting a stale rule: %w: %s", err, out)
		}
	}
	return nil
}

func (p *podNetwork) tearDown() error {
	if out, err := exec.Command("ip", "link", "del", bridgeName).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find") {
		return fmt.Errorf("ip link del: %w: %s", err, out)
	}
	return nil
}

// unmountUnder detaches every mount below dir (the kubelet's volumes, the
// containers' roots), deepest first.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// removeKubepodsCgroups removes the cgroups the kubelet made (cgroupfs
// driver on cgroup v1: /sys/fs/cgroup/<controller>/kubepods...), children
// first; they are empty once the pods are gone.
func removeKubepodsCgroups() error {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	var errs []error
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
