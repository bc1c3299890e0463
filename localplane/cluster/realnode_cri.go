package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/tower-dev/breakglass/internal/image"
	"github.com/tower-dev/breakglass/localplane/registry"
)

// removeSandboxes stops and removes every pod sandbox through the
// container runtime's own API, as the kubelet would: their containers are
// killed, their network namespaces and addresses released.
func (n *realNode) removeSandboxes() error {
	conn, err := grpc.NewClient("unix://"+n.path("containerd.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("listing the node's pods: %w", err)
	}
	var errs []error
	for _, sb := range list.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stopping pod %s/%s: %w", sb.Metadata.GetNamespace(), sb.Metadata.GetName(), err))
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("removing pod %s/%s: %w", sb.Metadata.GetNamespace(), sb.Metadata.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// removeLeftovers ends what containerd 2 leaves when it stops: a runc
// shim per pod whose sandbox was not removed in time, and runc's state of
// this node's containers, kept in a directory of the machine's. Only
// shims serving this node's socket, and only containers whose bundle is in
// this node's folder, are touched.
func (n *realNode) removeLeftovers() error {
	shims, err := processesWith("containerd-shim-runc-v2", n.path("containerd.sock"))
	if err != nil {
		return err
	}
	for _, pid := range shims {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	const runcRoot = "/run/containerd/runc/k8s.io"
	out, err := exec.Command("runc", "--root", runcRoot, "list", "--format", "json").Output()
	if err != nil {
		return nil // no state at all
	}
	var containers []struct {
		ID     string `json:"id"`
		Bundle string `json:"bundle"`
	}
	if err := json.Unmarshal(out, &containers); err != nil {
		return fmt.Errorf("runc list: %w", err)
	}
	var errs []error
	for _, c := range containers {
		if strings.HasPrefix(c.Bundle, n.dir+string(filepath.Separator)) {
			if out, err := exec.Command("runc", "--root", runcRoot, "delete", "--force", c.ID).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("runc delete %s: %w: %s", c.ID, err, out))
			}
		}
	}
	return errors.Join(errs...)
}

// pushPause pushes the node's sandbox ("pause") image, the debug image's
// busybox sleeping, and returns its reference by digest.
func pushPause(reg *registry.Registry) (string, error) {
	debug, err := image.BuildDebug("/bin/busybox", runtime.GOARCH, time.Unix(0, 0))
	if err != nil {
		return "", fmt.Errorf("%w (the real node needs a static busybox: apt-get install busybox-static)", err)
	}
	cf, err := debug.ConfigFile()
	if err != nil {
		return "", err
	}
	cfg := cf.Config
	cfg.Entrypoint, cfg.Cmd = []string{"/bin/sleep", "2147483647"}, nil
	pause, err := mutate.Config(debug, cfg)
	if err != nil {
		return "", err
	}
	ref, err := reg.PushImage("breakglass/pause", "1", pause)
	if err != nil {
		return "", err
	}
	return ref.String(), nil
}
