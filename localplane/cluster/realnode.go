package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tower-dev/breakglass/localplane/tools"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tower-dev/breakglass/internal/pki"
	"github.com/tower-dev/breakglass/localplane/registry"
)

// RealNodeName is the real node's name.
const RealNodeName = "real-node"

// realNode is a kubelet on Debian's containerd and runc, with the
// controllers and scheduler that turn Deployments into pods on it. Pods get
// real containers: users, read-only roots and capabilities are what runc
// applies, and attach and exec stream through the real kubelet.
//
// Everything it serves to pods (the API server through the `kubernetes`
// Service, and the registry) is on the pod network's bridge, a private
// address of this machine only: see realnode_net.go.
type realNode struct {
	dir string
	// certDir is the API server's certificate directory, made here.
	certDir string
	net     *podNetwork
	lock    *os.File
	procs   []*exec.Cmd
	// Registry is the OCI registry on the bridge: the node pulls the
	// sandbox image from it, and tests push their images to it.
	registry    *registry.Registry
	kubeletPort int
	// proxyHealthPort and dnsReadyPort are kube-proxy's and CoreDNS's
	// health ports on loopback; proxyStarted says kube-proxy wrote rules
	// that close must remove.
	proxyHealthPort, dnsReadyPort int
	proxyStarted                  bool
	// apiServerFlags are the flags the API server needs for this node.
	apiServerFlags map[string]string
}

// kubeletClientUser is who the API server is to the kubelet.
const kubeletClientUser = "kube-apiserver-kubelet-client"

// realNodeBins are the programs a real node needs; Start says which is missing.
var realNodeBins = []string{"kubelet", "kube-controller-manager", "kube-scheduler", "kube-proxy", "coredns", "containerd", "containerd-shim-runc-v2"}

// newRealNode prepares, before the API server starts, what it must be told:
// its serving certificate (valid for the `kubernetes` Service's address, so
// pods can check it), the kubelet's CA and its client certificate for the
// kubelet.
func newRealNode(progress func(string)) (*realNode, error) {
	for _, b := range realNodeBins {
		if _, err := os.Stat(filepath.Join(tools.BinDir(), b)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make node` first (it builds it from module sources)", b, tools.BinDir())
		}
	}
	for _, b := range []string{"runc", "iptables", "ip"} {
		if _, err := exec.LookPath(b); err != nil {
			return nil, fmt.Errorf("the real node needs %s: apt-get install runc containernetworking-plugins iptables", b)
		}
	}
	// One real node on this machine at a time: the bridge, the kubelet's
	// device-plugin socket and the kubepods cgroups are the machine's.
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "breakglass-real-node.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		// Another test's node: as long as that test runs (its own timeout
		// bounds it), not a hang of this one.
		progress(WaitingPrefix + "the real node another test runs on this machine to stop")
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			_ = lock.Close()
			return nil, err
		}
	}
	// Short: containerd's socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "bg-node-")
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	n := &realNode{dir: dir, lock: lock, certDir: filepath.Join(dir, "apiserver")}
	if err := os.Mkdir(n.certDir, 0o700); err != nil {
		n.close()
		return nil, err
	}
	if err := n.prepare(n.certDir); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

func (n *realNode) prepare(certDir string) error {
	var err error
	if n.net, err = setUpPodNetwork(n.dir); err != nil {
		return err
	}
	if n.kubeletPort, err = FreePort(); err != nil {
		return err
	}
	now := time.Now().Add(-time.Minute)
	ca, err := pki.NewCA("breakglass-real-node", now, 24*time.Hour)
	if err != nil {
		return err
	}
	bridge := net.ParseIP(BridgeIP)
	apiserver, err := ca.Issue("kube-apiserver", []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.IPv4(127, 0, 0, 1), bridge, net.ParseIP(KubernetesServiceIP)}, false)
	if err != nil {
		return err
	}
	kubelet, err := ca.Issue(RealNodeName, []string{RealNodeName}, []net.IP{bridge}, false)
	if err != nil {
		return err
	}
	kubeletClient, err := ca.Issue(kubeletClientUser, nil, nil, true)
	if err != nil {
		return err
	}
	saKey, saPub, err := serviceAccountKey()
	if err != nil {
		return err
	}
	files := map[string][]byte{
		filepath.Join(certDir, "apiserver.crt"): apiserver.CertPEM, filepath.Join(certDir, "apiserver.key"): apiserver.KeyPEM,
		// envtest's names for the service-account signing key.
		filepath.Join(certDir, "sa-signer.crt"): saPub, filepath.Join(certDir, "sa-signer.key"): saKey,
		n.path("ca.crt"): ca.PEM, n.path("kubelet.crt"): kubelet.CertPEM, n.path("kubelet.key"): kubelet.KeyPEM,
		n.path("kubelet-client.crt"): kubeletClient.CertPEM, n.path("kubelet-client.key"): kubeletClient.KeyPEM,
	}
	for name, data := range files {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			return err
		}
	}
	n.apiServerFlags = map[string]string{
		// Pods reach it on the bridge, through the `kubernetes` Service
		// whose endpoint is the advertised address; the tests and the
		// node's programs on loopback.
		"bind-address":                    "0.0.0.0",
		"advertise-address":               BridgeIP,
		"authorization-mode":              "Node,RBAC",
		"enable-admission-plugins":        "ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,MutatingAdmissionWebhook,ServiceAccount,NodeRestriction",
		"disable-admission-plugins":       "",
		"kubelet-certificate-authority":   n.path("ca.crt"),
		"kubelet-client-certificate":      n.path("kubelet-client.crt"),
		"kubelet-client-key":              n.path("kubelet-client.key"),
		"kubelet-preferred-address-types": "InternalIP",
		// Webhook calls go to a Service's endpoints (pod addresses on the
		// bridge): the API server runs beside kube-proxy, not behind it.
		"enable-aggregator-routing": "true",
	}
	return nil
}

func (n *realNode) path(name string) string { return filepath.Join(n.dir, name) }

// caPEM is the CA of the API server's serving certificate, for the clients
// of this cluster.
func (n *realNode) caPEM() ([]byte, error) { return os.ReadFile(n.path("ca.crt")) }

// start runs the registry, containerd, the kubelet, the controllers, the
// scheduler, kube-proxy and CoreDNS, and waits until the node is Ready, pods
// can be made, and Services and their names work.
func (n *realNode) start(ctx context.Context, c *Cluster, env *envtest.Environment, progress func(string)) error {
	reg, err := registry.StartOn(BridgeIP + ":0")
	if err != nil {
		return err
	}
	n.registry = reg
	pause, err := pushPause(reg)
	if err != nil {
		return fmt.Errorf("the sandbox image: %w", err)
	}
	users := map[string]envtest.User{
		"kubelet":                 {Name: "system:node:" + RealNodeName, Groups: []string{"system:nodes"}},
		"kube-controller-manager": {Name: "system:kube-controller-manager"},
		"kube-scheduler":          {Name: "system:kube-scheduler"},
	}
	maps.Copy(users, serviceUsers)
	for name, u := range users {
		au, err := env.AddUser(u, nil)
		if err != nil {
			return err
		}
		kc, err := au.KubeConfig()
		if err != nil {
			return err
		}
		if err := os.WriteFile(n.path(name+".kubeconfig"), kc, 0o600); err != nil {
			return err
		}
	}
	// The kubelet asks the API server whether its client may use the
	// kubelet's API (attach, exec, logs): as kubeadm binds it.
	if _, err := c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver-kubelet-api-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: kubeletClientUser}},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	progress("containerd")
	if err := n.startContainerd(ctx, pause); err != nil {
		return err
	}
	progress("the kubelet, the controllers and the scheduler")
	if err := n.startKubelet(); err != nil {
		return err
	}
	if err := n.run("kube-controller-manager", "--kubeconfig="+n.path("kube-controller-manager.kubeconfig"),
		"--use-service-account-credentials=true",
		"--root-ca-file="+n.path("ca.crt"), "--leader-elect=false", "--secure-port=0",
		"--controllers=*,-node-ipam-controller,-persistentvolume-binder-controller,-persistentvolume-attach-detach-controller"); err != nil {
		return err
	}
	if err := n.run("kube-scheduler", "--kubeconfig="+n.path("kube-scheduler.kubeconfig"), "--leader-elect=false", "--secure-port=0"); err != nil {
		return err
	}
	progress("kube-proxy and CoreDNS")
	n.proxyStarted = true
	if err := n.startServices(ctx, c); err != nil {
		return err
	}
	progress("the node Ready")
	return n.waitReady(ctx, c)
}

// nodeReadyWithin catches a node that never goes Ready (its logs say why).
// It is no measure of speed: a cold, busy machine takes a minute or more.
const nodeReadyWithin = 5 * time.Minute

// waitReady waits for the node to be Ready and for the `default`
// ServiceAccount (made by the controllers) in `default`.
func (n *realNode) waitReady(ctx context.Context, c *Cluster) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, nodeReadyWithin, true, func(ctx context.Context) (bool, error) {
		node, err := c.Kube.CoreV1().Nodes().Get(ctx, RealNodeName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ready := false
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				ready, last = cond.Status == corev1.ConditionTrue, cond.Reason+": "+cond.Message
			}
		}
		if !ready {
			return false, nil
		}
		_, err = c.Kube.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			last = "no default ServiceAccount yet: " + err.Error()
			return false, nil
		}
		last = n.servicesReady(ctx)
		return last == "", nil
	})
	if err != nil {
		return fmt.Errorf("the real node is not ready (%s): %w; its logs are in %s", last, err, n.dir)
	}
	return nil
}

// close stops the node's pods through the runtime (so their networks and
// mounts are torn down), then its programs, then undoes what it changed on
// the machine.
func (n *realNode) close() {
	var errs []error
	// The kubelet and the controllers first, so nothing restarts a pod;
	// then the pods through containerd (the first started), then it.
	for i := len(n.procs) - 1; i >= 1; i-- {
		stopProcess(n.procs[i])
	}
	if len(n.procs) > 0 {
		errs = append(errs, n.removeSandboxes())
		stopProcess(n.procs[0])
		errs = append(errs, n.removeLeftovers())
	}
	if n.registry != nil {
		n.registry.Close()
	}
	if n.proxyStarted {
		errs = append(errs, cleanUpProxyRules())
	}
	errs = append(errs, removeKubeletChains())
	errs = append(errs, unmountUnder(n.dir), removeKubepodsCgroups())
	if n.net != nil {
		errs = append(errs, n.net.tearDown())
	}
	_ = os.Remove("/var/lib/kubelet/device-plugins/kubelet.sock")
	errs = append(errs, n.removeLogLinks())
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "real node clean-up: %v\n", err)
	}
	// BREAKGLASS_KEEP_NODE=1 keeps the logs and configuration to read.
	if os.Getenv("BREAKGLASS_KEEP_NODE") == "" {
		_ = os.RemoveAll(n.dir)
	}
	_ = n.lock.Close()
}

// removeLogLinks removes the kubelet's links to this node's container logs
// from /var/log/containers (a fixed path; the logs are in the node's folder).
func (n *realNode) removeLogLinks() error {
	links, _ := filepath.Glob("/var/log/containers/*.log")
	var errs []error
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, n.dir+"/") {
			errs = append(errs, os.Remove(l))
		}
	}
	return errors.Join(errs...)
}

// serviceAccountKey is the API server's key for signing ServiceAccount
// tokens (the pods' in-cluster credentials), PEM-encoded, and its public key.
func serviceAccountKey() (key, pub []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), nil
}
