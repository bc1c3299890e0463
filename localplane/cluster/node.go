package cluster

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/tower-dev/breakglass/internal/pki"
)

// NodeName is the virtual node's name; a test pod sets spec.nodeName to it.
const NodeName = "virtual-node"

// podWorkers is how many pods the virtual node syncs at once.
const podWorkers = 8

// node is the virtual node: an in-process kubelet endpoint that runs each
// container's command as a local process on a pty and serves attach and exec
// on the API server's real streaming path. It stands in for the container
// runtime only: the API server, RBAC and admission in front of it are real.
type node struct {
	listener net.Listener
	server   *http.Server
	runtime  *processes
	// apiServerFlags are the kubelet client flags the API server needs.
	apiServerFlags map[string]string
	// unpullable images are never started: ErrImagePull.
	unpullable []string
	// workers are its pod workers (register).
	workers sync.WaitGroup
	// dir holds the node's certificates and the API server's client key
	// for it: removed when the node closes, so nothing of a stopped
	// cluster stays on disk.
	dir string
}

// NodeDir is where the virtual node keeps its certificates and the API
// server's client key for it; "" without a virtual node. Stop removes it.
func (c *Cluster) NodeDir() string {
	if c.node == nil {
		return ""
	}
	return c.node.dir
}

// newNode prepares the node's certificates and listener before the API
// server starts, so the API server can be told how to reach it.
func newNode(dir string) (*node, error) {
	now := time.Now().Add(-time.Minute)
	servingCA, err := pki.NewCA("virtual-kubelet-serving", now, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	serving, err := servingCA.Issue("virtual-kubelet", nil, []net.IP{net.IPv4(127, 0, 0, 1)}, false)
	if err != nil {
		return nil, err
	}
	clientCA, err := pki.NewCA("virtual-kubelet-clients", now, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	apiserver, err := clientCA.Issue("kube-apiserver-kubelet-client", nil, nil, true)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"kubelet-ca.crt": servingCA.PEM, "apiserver-kubelet-client.crt": apiserver.CertPEM, "apiserver-kubelet-client.key": apiserver.KeyPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		return nil, err
	}
	clients := x509.NewCertPool()
	clients.AddCert(clientCA.Cert)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	n := &node{listener: l, runtime: newProcesses(), dir: dir}
	mux := http.NewServeMux()
	mux.HandleFunc("/attach/{ns}/{pod}/{container}", n.attach)
	mux.HandleFunc("/exec/{ns}/{pod}/{container}", n.exec)
	// Only the API server, with the client certificate made here, may connect.
	n.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientCAs: clients, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	}}
	n.apiServerFlags = map[string]string{
		"kubelet-certificate-authority":   filepath.Join(dir, "kubelet-ca.crt"),
		"kubelet-client-certificate":      filepath.Join(dir, "apiserver-kubelet-client.crt"),
		"kubelet-client-key":              filepath.Join(dir, "apiserver-kubelet-client.key"),
		"kubelet-preferred-address-types": "InternalIP",
	}
	go func() { _ = n.server.ServeTLS(l, "", "") }()
	return n, nil
}

func (n *node) port() int { return n.listener.Addr().(*net.TCPAddr).Port }

// register creates the Node object pointing at this endpoint, and starts
// running the pods bound to it until ctx ends.
func (n *node) register(ctx context.Context, c *Cluster) error {
	nodeObj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName}}
	if err := c.Client.Create(ctx, nodeObj); err != nil {
		return fmt.Errorf("creating the virtual node: %w", err)
	}
	nodeObj.Status = corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(n.port())}},
		Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
	}
	if err := c.Client.Status().Update(ctx, nodeObj); err != nil {
		return fmt.Errorf("reporting the virtual node's status: %w", err)
	}
	// The node writes pods' status as a kubelet would, in its own name (the
	// copy policies take a copy's status from its node only); envtest's API
	// server runs no Node authorizer, so RBAC is the cluster admin's.
	kubelet, err := c.As("system:node:"+NodeName, "system:nodes", "system:masters")
	if err != nil {
		return err
	}
	// As a kubelet's pod workers do: each pod is synced by one worker at a
	// time, several pods at once, so that a hundred debug containers
	// added together are not started one after another.
	queue := workqueue.NewTyped[string]()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	lw := cache.NewListWatchFromClient(c.Kube.CoreV1().RESTClient(), "pods", "", fields.OneTermEqualSelector("spec.nodeName", NodeName))
	store, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw, ObjectType: &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue},
	})
	go func() { <-ctx.Done(); queue.ShutDown() }()
	// uids is, per pod name, the pod last synced under it: a pod deleted
	// and made again under its name before a worker got to it (the queue
	// holds names) must not take over the old one's processes.
	uids := map[string]types.UID{}
	var mu sync.Mutex
	for range podWorkers {
		n.workers.Go(func() {
			for {
				key, quit := queue.Get()
				if quit {
					return
				}
				obj, exists, _ := store.GetByKey(key)
				pod, _ := obj.(*corev1.Pod)
				mu.Lock()
				last, had := uids[key]
				if exists && pod != nil {
					uids[key] = pod.UID
				} else {
					delete(uids, key)
				}
				mu.Unlock()
				if ns, name, err := cache.SplitMetaNamespaceKey(key); err == nil && had && (pod == nil || last != pod.UID) {
					n.runtime.stopPod(ns, name)
				}
				// Once the node stops, the queue's backlog starts nothing.
				if pod != nil && ctx.Err() == nil {
					n.sync(ctx, kubelet.Kube, pod)
				}
				queue.Done(key)
			}
		})
	}
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("the virtual node's pod watch did not sync")
	}
	return nil
}

// sync starts the pod's containers (and any new ephemeral container) and
// reports them running.
func (n *node) sync(ctx context.Context, kube kubernetes.Interface, pod *corev1.Pod) {
	if !pod.DeletionTimestamp.IsZero() {
		// As a kubelet does: stop the containers, then let the pod go at once.
		n.runtime.stopPod(pod.Namespace, pod.Name)
		_ = kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptrZero(), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		return
	}
	changed := false
	for _, ctr := range pod.Spec.Containers {
		if slices.Contains(n.unpullable, ctr.Image) {
			continue
		}
		argv := imageVolumeCommand(pod, ctr.VolumeMounts, append(append([]string(nil), ctr.Command...), ctr.Args...))
		if started, _ := n.runtime.start(pod, ctr.Name, argv, ctr.SecurityContext, ctr.StdinOnce); started {
			changed = true
		}
	}
	for _, ec := range pod.Spec.EphemeralContainers {
		if slices.Contains(n.unpullable, ec.Image) {
			changed = true // reported waiting below
			continue
		}
		cmd := append(append([]string(nil), ec.Command...), ec.Args...)
		if started, _ := n.runtime.start(pod, ec.Name, cmd, ec.SecurityContext, ec.StdinOnce); started {
			changed = true
		}
	}
	if !changed && pod.Status.Phase == corev1.PodRunning {
		return
	}
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		cur, err := kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cur.Status.Phase = corev1.PodRunning
		cur.Status.PodIP, cur.Status.HostIP = "127.0.0.1", "127.0.0.1"
		cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		cur.Status.ContainerStatuses = nil
		for _, ctr := range cur.Spec.Containers {
			cur.Status.ContainerStatuses = append(cur.Status.ContainerStatuses, n.status(ctr.Name, ctr.Image))
		}
		cur.Status.EphemeralContainerStatuses = nil
		for _, ec := range cur.Spec.EphemeralContainers {
			cur.Status.EphemeralContainerStatuses = append(cur.Status.EphemeralContainerStatuses, n.status(ec.Name, ec.Image))
		}
		_, err = kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err == nil, nil
	})
}

// imageVolumeCommand runs a command from an image volume (a held copy's
// sleep, from the debug image) as the machine's own program of that path:
// the virtual node has no images, so the machine's filesystem stands in
// for the mounted image's.
func imageVolumeCommand(pod *corev1.Pod, mounts []corev1.VolumeMount, argv []string) []string {
	if len(argv) == 0 {
		return argv
	}
	for _, m := range mounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name == m.Name && v.Image != nil && strings.HasPrefix(argv[0], m.MountPath+"/") {
				argv[0] = strings.TrimPrefix(argv[0], m.MountPath)
				return argv
			}
		}
	}
	return argv
}

// status is a container's status: running, or waiting on an image the
// node cannot pull.
func (n *node) status(name, image string) corev1.ContainerStatus {
	if slices.Contains(n.unpullable, image) {
		return corev1.ContainerStatus{Name: name, Image: image, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ErrImagePull", Message: "failed to pull image " + image + ": not found"}}}
	}
	return runningStatus(name, image)
}

func runningStatus(name, image string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Image: image, ImageID: imageID(image), Ready: true, Started: ptrTrue(),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
}

// imageID is what a real node reports for the image it ran: the repository
// and the digest it resolved, here a stand-in digest for a tag.
func imageID(image string) string {
	if strings.Contains(image, "@sha256:") {
		return image
	}
	repo := image
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo = image[:i]
	}
	sum := sha256.Sum256([]byte(image))
	return repo + "@sha256:" + hex.EncodeToString(sum[:])
}

func ptrTrue() *bool { t := true; return &t }

func ptrZero() *int64 { var z int64; return &z }

func (n *node) attach(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	remotecommand.ServeAttach(w, r, n.runtime, r.PathValue("ns")+"/"+r.PathValue("pod"), "", r.PathValue("container"),
		opts, 4*time.Hour, 30*time.Second, remotecommand.SupportedStreamingProtocols)
}

func (n *node) exec(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	remotecommand.ServeExec(w, r, n.runtime, r.PathValue("ns")+"/"+r.PathValue("pod"), "", r.PathValue("container"),
		r.URL.Query()["command"], opts, 4*time.Hour, 30*time.Second, remotecommand.SupportedStreamingProtocols)
}

func (n *node) close() {
	if n.server != nil {
		_ = n.server.Close()
	}
	// Its context is cancelled by now (Cluster.Stop): no worker starts a
	// process after stopAll.
	n.workers.Wait()
	n.runtime.stopAll()
	_ = os.RemoveAll(n.dir)
}
