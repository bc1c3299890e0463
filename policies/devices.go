package policies

import (
	"fmt"
	"strings"
)

// A container can be handed the node's devices without any field of the
// pod saying so: a container runtime's device hook reads the container's
// environment, or the paths it mounts, as a request. Kubernetes gives
// none of these a meaning, so no allowlist of fields can hold them; where
// a copy must carry the app's own environment, the variables below are
// left out (sessionobjects.CopyPod) and refused (copy.app.env), each with the
// hook that reads it. A debug container has no environment and mounts only
// volumes that hold neither a secret nor a node path, so for it the list
// matters only for mount paths. What the list cannot know (a variable in
// the image's own config, a hook nobody named here) is in
// docs/threat-model.md.

// DeviceRequest is one variable (or prefix of variables) or mount path
// a device hook reads as a request for the node's devices.
type DeviceRequest struct {
	// Name is the variable's name, or what Match says of it.
	Name  string
	Match Match
	// Reader is the runtime or hook that reads it, and where.
	Reader string
}

// Match is how a DeviceRequest's Name is matched.
type Match int

// The matches.
const (
	Exactly Match = iota
	Prefix
	// Contains: a path is matched wherever the name shows in it, so no
	// second spelling of one path (//, /./, a trailing /) slips past.
	Contains
)

// DeviceEnv are the environment variables device hooks read.
var DeviceEnv = []DeviceRequest{
	{"NVIDIA_", Prefix, "the NVIDIA Container Toolkit (nvidia-container-runtime-hook and its CDI mode): NVIDIA_VISIBLE_DEVICES=all hands over every GPU; " +
		"NVIDIA_DRIVER_CAPABILITIES, NVIDIA_REQUIRE_*, NVIDIA_MIG_*, NVIDIA_IMEX_CHANNELS, NVIDIA_GDS, NVIDIA_MOFED and NVIDIA_NVSWITCH shape what it mounts " +
		"(github.com/NVIDIA/nvidia-container-toolkit, internal/config/image)"},
	{"AMD_VISIBLE_DEVICES", Exactly, "the AMD Container Toolkit's amd-container-runtime (github.com/ROCm/container-toolkit)"},
	{"HABANA_VISIBLE_DEVICES", Exactly, "habana-container-runtime's prestart hook, Intel Gaudi (github.com/HabanaAI/habana-container-runtime)"},
	{"ASCEND_", Prefix, "Huawei's ascend-docker-runtime: ASCEND_VISIBLE_DEVICES, ASCEND_RUNTIME_OPTIONS, ASCEND_RUNTIME_MOUNTS, ASCEND_ALLOW_LINK, " +
		"ASCEND_VNPU_SPECS (gitee.com/ascend/ascend-docker-runtime)"},
	{"ENFLAME_VISIBLE_DEVICES", Exactly, "Enflame's GCU container toolkit (its device plugin sets it; =all hands over every GCU)"},
	{"AWS_NEURON_VISIBLE_DEVICES", Exactly, "AWS's OCI Neuron hook, Inferentia and Trainium: ALL hands over every device (awsdocs-neuron, tutorial-oci-hook)"},
}

// DeviceMountPaths are the mount paths device hooks read: the NVIDIA
// Container Toolkit with accept-nvidia-visible-devices-as-volume-mounts
// takes every mount under its root as a device's name
// (DeviceListAsVolumeMountsRoot).
var DeviceMountPaths = []DeviceRequest{
	{"nvidia-container-devices", Contains, "the NVIDIA Container Toolkit, devices as volume mounts under /var/run/nvidia-container-devices " +
		"(accept-nvidia-visible-devices-as-volume-mounts)"},
}

func (d DeviceRequest) matches(s string) bool {
	switch d.Match {
	case Prefix:
		return strings.HasPrefix(s, d.Name)
	case Contains:
		return strings.Contains(s, d.Name)
	}
	return s == d.Name
}

// matchExpr is the CEL that is true when the string expr is this request.
func (d DeviceRequest) matchExpr(expr string) string {
	switch d.Match {
	case Prefix:
		return fmt.Sprintf(`%s.startsWith(%s)`, expr, q(d.Name))
	case Contains:
		return fmt.Sprintf(`%s.contains(%s)`, expr, q(d.Name))
	}
	return fmt.Sprintf(`%s == %s`, expr, q(d.Name))
}

func anyDeviceExpr(list []DeviceRequest, expr string) string {
	parts := make([]string, len(list))
	for i, d := range list {
		parts[i] = d.matchExpr(expr)
	}
	return "(" + strings.Join(parts, " || ") + ")"
}

// deviceEnvExpr is true for an environment variable e that asks for devices.
var deviceEnvExpr = anyDeviceExpr(DeviceEnv, "e.name")

// devicePrefixExpr is true for an envFrom source f whose prefix, put
// before a ConfigMap's keys (which the policy cannot see), could spell a
// device request: a prefix of one's name, or one that starts with a
// prefix that is one.
var devicePrefixExpr = func() string {
	parts := make([]string, len(DeviceEnv))
	for i, d := range DeviceEnv {
		parts[i] = fmt.Sprintf(`%s.startsWith(p)`, q(d.Name))
		if d.Match == Prefix {
			parts[i] += fmt.Sprintf(` || p.startsWith(%s)`, q(d.Name))
		}
	}
	return fmt.Sprintf(`f.?prefix.orValue('') != '' && [f.prefix].exists(p, %s)`, strings.Join(parts, " || "))
}()

// IsDevicePrefix reports whether an envFrom prefix could spell a device
// request with a ConfigMap's keys: the copy builder leaves such sources out.
func IsDevicePrefix(p string) bool {
	if p == "" {
		return false
	}
	for _, d := range DeviceEnv {
		if strings.HasPrefix(d.Name, p) || (d.Match == Prefix && strings.HasPrefix(p, d.Name)) {
			return true
		}
	}
	return false
}

// deviceMountExpr is true for a volume mount m that asks for devices.
var deviceMountExpr = anyDeviceExpr(DeviceMountPaths, "m.mountPath")

// IsDeviceEnv reports whether a device hook would read the environment
// variable name as a request for devices: the copy builder leaves such
// variables out.
func IsDeviceEnv(name string) bool { return anyMatches(DeviceEnv, name) }

// IsDeviceMount reports whether a device hook would read a mount at path as
// a request for devices.
func IsDeviceMount(path string) bool { return anyMatches(DeviceMountPaths, path) }

func anyMatches(list []DeviceRequest, s string) bool {
	for _, d := range list {
		if d.matches(s) {
			return true
		}
	}
	return false
}
