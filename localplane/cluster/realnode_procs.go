package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tower-dev/breakglass/localplane/tools"

	"k8s.io/apimachinery/pkg/util/wait"
)

// startKubelet runs the kubelet with the settings RECIPES.md found each
// needed: cgroup v1 with cgroupfs, no swap check, x509 and webhook
// authentication with authorization by the API server, the node's address
// on the bridge (a loopback node address gives no InternalIP), and CoreDNS
// on the bridge as the pods' DNS.
func (n *realNode) startKubelet() error {
	if err := os.WriteFile(n.path("resolv.conf"), []byte("nameserver "+BridgeIP+"\n"), 0o644); err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://%[1]s/containerd.sock
address: %[2]s
port: %[3]d
readOnlyPort: 0
healthzPort: 0
tlsCertFile: %[1]s/kubelet.crt
tlsPrivateKeyFile: %[1]s/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[1]s/ca.crt}
authorization: {mode: Webhook}
resolvConf: %[1]s/resolv.conf
clusterDNS: [%[2]s]
clusterDomain: %[4]s
podLogsDir: %[1]s/pod-logs
serializeImagePulls: false
localStorageCapacityIsolation: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, n.dir, BridgeIP, n.kubeletPort, clusterDomain)
	if err := os.WriteFile(n.path("kubelet.yaml"), []byte(config), 0o600); err != nil {
		return err
	}
	return n.run("kubelet", "--config="+n.path("kubelet.yaml"), "--kubeconfig="+n.path("kubelet.kubeconfig"),
		"--root-dir="+n.path("kubelet"), "--node-ip="+BridgeIP, "--hostname-override="+RealNodeName)
}

// startContainerd runs containerd 2 with a config of its own: the CRI
// plugin, overlayfs, runc with cgroupfs, the bridge
// network, the registry on the bridge over plain HTTP, and
// restrict_oom_score_adj (root here lacks CAP_SYS_RESOURCE; without it runc
// fails the sandbox with "can't get final child's PID from pipe").
func (n *realNode) startContainerd(ctx context.Context, pause string) error {
	hosts := n.path(filepath.Join("certs.d", n.registry.Host))
	if err := os.MkdirAll(hosts, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(hosts, "hosts.toml"), []byte(fmt.Sprintf("server = %q\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n",
		"http://"+n.registry.Host, "http://"+n.registry.Host)), 0o644); err != nil {
		return err
	}
	config := fmt.Sprintf(`version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
[grpc]
  address = "%[1]s/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[2]q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "%[1]s/cni"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "%[1]s/certs.d"
`, n.dir, pause)
	if err := os.WriteFile(n.path("containerd.toml"), []byte(config), 0o600); err != nil {
		return err
	}
	if err := n.run("containerd", "--config="+n.path("containerd.toml")); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(n.path("containerd.sock"))
		return err == nil, nil
	})
}

// run starts one of the node's programs from bin/, its output in the
// node's directory. bin/ comes first on their PATH, so containerd starts
// its own runc shim, not a packaged one of another version.
func (n *realNode) run(name string, args ...string) error {
	bin := filepath.Join(tools.BinDir(), name)
	log, err := os.Create(n.path(name + ".log"))
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PATH="+tools.BinDir()+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	n.procs = append(n.procs, cmd)
	return nil
}

// stopProcess ends one of the node's programs and its children: SIGTERM,
// then SIGKILL after 10 s.
func stopProcess(p *exec.Cmd) {
	_ = syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
		<-done
	}
}
