// Package cluster starts a real control plane for tests: kube-apiserver and
// etcd built from module sources into bin/ (make tools), started through
// controller-runtime's envtest with RBAC, ValidatingAdmissionPolicy and
// admission webhooks on, with the plane installed from the very files the
// chart ships.
package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tower-dev/breakglass/localplane/tools"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tower-dev/breakglass/api"
	"github.com/tower-dev/breakglass/localplane/registry"
	"github.com/tower-dev/breakglass/manifests"
	"github.com/tower-dev/breakglass/policies"
)

// Options says what to install.
type Options struct {
	// Profile selects the policy set; the plane is not installed when empty.
	Profile policies.Profile
	// DebugImages are the debug images the policies allow (the chart's
	// params.debugImages).
	DebugImages []string
	// NodeAccessNamespaces are where a pod may reach its node on Flight
	// (the chart's params.nodeAccessNamespaces): a suite that needs such a
	// pod, as a debug container's target, makes it there.
	NodeAccessNamespaces []string
	// Empty starts the control plane with nothing of the plane in it, not
	// even the CRDs.
	Empty bool
	// VirtualNode adds a node whose containers are local processes, so that
	// attach and exec go through the API server's real streaming path.
	VirtualNode bool
	// WithoutPolicies installs everything but the admission policies and
	// their bindings: a baseline to measure what the policies cost.
	WithoutPolicies bool
	// UnpullableImages are images the virtual node cannot pull: their
	// containers wait with ErrImagePull, as a kubelet's do.
	UnpullableImages []string
	// RealNode adds a kubelet on containerd and runc, with the controllers
	// and the scheduler (make node; the packages of hack/debian-packages.sh):
	// Deployments become pods with real containers. See realnode.go.
	RealNode bool
	// APIServer is the kube-apiserver binary to run instead of the one in
	// tools.BinDir(): another version's (make tools builds the oldest claimed).
	APIServer string
	// Progress, if set, is told each step of bringing the cluster up as it
	// begins, so that a caller can tell a slow step from a hung one. A step
	// that starts with WaitingPrefix waits on something outside the cluster
	// that ends on its own (another test's real node).
	Progress func(step string)
}

// APIServerEnv names a kube-apiserver binary every cluster of a suite
// runs when its Options name none: make test runs the policy-plane suite
// on the oldest version the chart claims this way.
const APIServerEnv = "BREAKGLASS_APISERVER"

// WaitingPrefix starts a Progress step that waits on another process.
const WaitingPrefix = "waiting for "

// Cluster is a running control plane.
type Cluster struct {
	env        *envtest.Environment
	node       *node
	nodeCancel context.CancelFunc
	realNode   *realNode
	// certDir is the API server's, removed at Stop (a real node's is its own).
	certDir string
	// Registry is the real node's OCI registry, at an address its pods
	// reach (on BridgeIP); nil without a real node.
	Registry *registry.Registry
	// Config is a cluster-admin (system:masters) client configuration.
	Config *rest.Config
	Client client.Client
	Kube   kubernetes.Interface
	Scheme *k8sruntime.Scheme
	// profile is the plane's, when installed.
	profile policies.Profile
}

// startWithin is how long etcd and the API server each have to answer.
const startWithin = 2 * time.Minute

// Start starts a control plane and installs the plane for opts.Profile. The
// caller stops it with Stop, also when a test fails.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	assets := tools.BinDir()
	apiServer := opts.APIServer
	if apiServer == "" {
		apiServer = os.Getenv(APIServerEnv)
	}
	if apiServer == "" {
		apiServer = filepath.Join(assets, "kube-apiserver")
	}
	for _, b := range []string{apiServer, filepath.Join(assets, "etcd")} {
		if _, err := os.Stat(b); err != nil {
			return nil, fmt.Errorf("%s not found: run `make tools` first (it builds it from module sources)", b)
		}
	}
	// envtest gives each of etcd and the API server 20 s to answer, then
	// starts them again on other ports, five times: a busy machine (make
	// test beside a build) trips that and fails the suite for nothing. A
	// hang is still caught, later.
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: startWithin}
	if !opts.Empty {
		crds, err := manifests.CRDs()
		if err != nil {
			return nil, err
		}
		env.CRDs = crds
	}
	api := env.ControlPlane.GetAPIServer()
	api.Path = apiServer
	// What it said last, for an error should it not start.
	apiLog := &tailBuffer{max: 16 << 10}
	api.Out, api.Err = apiLog, apiLog
	args := api.Configure().
		Set("enable-admission-plugins", "ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,MutatingAdmissionWebhook").
		Set("authorization-mode", "RBAC")
	var n *node
	if opts.VirtualNode {
		dir, err := os.MkdirTemp("", "breakglass-virtual-node")
		if err != nil {
			return nil, err
		}
		if n, err = newNode(dir); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		n.unpullable = opts.UnpullableImages
		for k, v := range n.apiServerFlags {
			args.Set(k, v)
		}
	}
	// A certificate directory of ours, so that a restarted API server
	// (RestartAPIServer) serves the same certificates to the same clients.
	certDir, err := os.MkdirTemp("", "breakglass-apiserver")
	if err != nil {
		return nil, err
	}
	api.CertDir = certDir
	var rn *realNode
	if opts.RealNode {
		var err error
		if rn, err = newRealNode(progress); err != nil {
			return nil, err
		}
		for k, v := range rn.apiServerFlags {
			args.Set(k, v)
		}
		_ = os.RemoveAll(certDir)
		certDir = ""
		api.CertDir = rn.certDir
		if api.CA, err = rn.caPEM(); err != nil {
			rn.close()
			return nil, err
		}
	}
	progress("kube-apiserver and etcd")
	cfg, err := env.Start()
	if err != nil {
		if certDir != "" {
			_ = os.RemoveAll(certDir)
		}
		if n != nil {
			n.close()
		}
		if rn != nil {
			rn.close()
		}
		return nil, fmt.Errorf("starting kube-apiserver and etcd: %w; the API server's last words:\n%s", err, apiLog.String())
	}
	c := &Cluster{env: env, Config: cfg, node: n, realNode: rn}
	c.certDir = certDir
	if err := c.init(); err != nil {
		_ = c.Stop()
		return nil, err
	}
	if rn != nil {
		if err := rn.start(ctx, c, env, progress); err != nil {
			_ = c.Stop()
			return nil, err
		}
		c.Registry = rn.registry
	}
	if n != nil {
		var nodeCtx context.Context
		nodeCtx, c.nodeCancel = context.WithCancel(context.Background())
		if err := n.register(nodeCtx, c); err != nil {
			_ = c.Stop()
			return nil, err
		}
	}
	if opts.Profile != "" {
		progress("the " + string(opts.Profile) + " plane's manifests")
		if err := c.install(ctx, opts); err != nil {
			_ = c.Stop()
			return nil, err
		}
	}
	return c, nil
}

func (c *Cluster) init() error {
	scheme, err := api.Scheme()
	if err != nil {
		return err
	}
	c.Scheme = scheme
	// Some suites read and write the CRDs themselves.
	if err := apiextensionsv1.AddToScheme(c.Scheme); err != nil {
		return err
	}
	cl, err := client.New(c.Config, client.Options{Scheme: c.Scheme})
	if err != nil {
		return err
	}
	c.Client = cl
	c.Kube, err = kubernetes.NewForConfig(c.Config)
	return err
}

// Stop stops the API server and etcd.
func (c *Cluster) Stop() error {
	if c == nil || c.env == nil {
		return nil
	}
	if c.nodeCancel != nil {
		c.nodeCancel()
	}
	if c.realNode != nil {
		c.realNode.close()
	}
	err := c.env.Stop()
	// After the API server: it holds the node's client key until it stops.
	if c.node != nil {
		c.node.close()
	}
	if c.certDir != "" {
		_ = os.RemoveAll(c.certDir)
	}
	return err
}

// RestartAPIServer kills kube-apiserver (SIGKILL: a crash, or a node
// lost) and starts it again on the same port, certificates and etcd:
// every connection through it breaks at once.
func (c *Cluster) RestartAPIServer() error {
	api := c.env.ControlPlane.GetAPIServer()
	pid, err := processWith("kube-apiserver", "--cert-dir="+api.CertDir)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing kube-apiserver (pid %d): %w", pid, err)
	}
	if err := api.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// install applies the plane for opts.Profile: the namespace, and the
// chart's generated manifests rendered with its default params and
// opts.DebugImages; then it waits until the API server enforces the
// policies.
func (c *Cluster) install(ctx context.Context, opts Options) error {
	profile := opts.Profile
	c.profile = profile
	if err := c.Apply(ctx, manifests.Namespace()); err != nil {
		return err
	}
	// The identities are a template of the chart's, not its generated files.
	for _, sa := range manifests.ServiceAccounts() {
		if err := c.Apply(ctx, sa); err != nil {
			return err
		}
	}
	params := policies.DefaultParams(opts.DebugImages...)
	params.NodeAccessNamespaces = append(params.NodeAccessNamespaces, opts.NodeAccessNamespaces...)
	objs, err := manifests.Plane(profile, params)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if opts.WithoutPolicies && o.GroupVersionKind().Group == "admissionregistration.k8s.io" {
			continue
		}
		if err := c.Apply(ctx, o); err != nil {
			return err
		}
	}
	if opts.WithoutPolicies {
		return nil
	}
	return c.WaitEnforced(ctx)
}

// SetParams renders params into the plane's policies and applies them, as
// a `helm upgrade` with those params values does. The API server enforces
// the new ones a moment later.
func (c *Cluster) SetParams(ctx context.Context, params policies.Params) error {
	if c.profile == "" {
		return fmt.Errorf("no plane is installed")
	}
	objs, err := manifests.Plane(c.profile, params)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetKind() == "ValidatingAdmissionPolicy" {
			if err := c.Apply(ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// Apply creates obj, or updates it to obj if it exists.
func (c *Cluster) Apply(ctx context.Context, obj client.Object) error {
	err := c.Client.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		existing := &unstructured.Unstructured{}
		existing.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
			return err
		}
		obj.SetResourceVersion(existing.GetResourceVersion())
		err = c.Client.Update(ctx, obj)
	}
	if err != nil {
		return fmt.Errorf("applying %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	return nil
}

// WaitEnforced waits until the policies, their bindings and the params are
// all in force: the API server loads them through informers, a moment after
// they are created, and may load some in one refresh and the rest in the
// next. It probes with dry-run requests that only enforced policies refuse:
// a grant too long (a policy that reads the params), then a sentinel policy
// and binding made after every other one. The informers deliver objects in
// the order they were written, so once the sentinel is enforced every
// policy and binding made before it is loaded too.
func (c *Cluster) WaitEnforced(ctx context.Context) error {
	probe := ProbeGrant("shop-probe", "2h")
	probe.Namespace = "default"
	if err := c.refused(ctx, probe, "[grant.ttl]"); err != nil {
		return err
	}
	policy, binding := enforcedSentinel()
	for _, o := range []client.Object{policy, binding} {
		if err := c.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("the sentinel policy: %w", err)
		}
	}
	defer func() {
		_ = c.Client.Delete(context.Background(), binding)
		_ = c.Client.Delete(context.Background(), policy)
	}()
	return c.refused(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: sentinelProbe, Namespace: "default"}}, "[sentinel]")
}

// sentinelProbe is the one object the sentinel policy refuses.
const sentinelProbe = "breakglass-enforced-probe"

// enforcedSentinel is a policy that refuses only the ConfigMap
// sentinelProbe, and its binding.
func enforcedSentinel() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	name := "breakglass-test-sentinel"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != '" + sentinelProbe + "'",
				Message: "[sentinel] the test cluster's policies are loaded"}},
		}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	return policy, binding
}

// refused waits up to a minute until a dry-run create of obj is refused
// with want in its message.
func (c *Cluster) refused(ctx context.Context, obj client.Object, want string) error {
	err := Within(60*time.Second, func() (bool, error) {
		err := c.Client.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
		if err == nil {
			return false, fmt.Errorf("%s %s was admitted", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
		}
		return strings.Contains(err.Error(), want), err
	})
	if err != nil {
		return fmt.Errorf("the policies were not in force (no %s): %w", want, err)
	}
	return nil
}

// processWith finds the process of this test run whose command is name
// and whose arguments include arg (its own certificate directory, say).
func processWith(name, arg string) (int, error) {
	pids, err := processesWith(name, arg)
	if err != nil {
		return 0, err
	}
	if len(pids) == 0 {
		return 0, fmt.Errorf("no %s process with %s", name, arg)
	}
	return pids[0], nil
}

// processesWith lists the processes whose command is name and whose
// arguments include arg.
func processesWith(name, arg string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) == name && slices.Contains(args[1:], arg) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
