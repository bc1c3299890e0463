//go:build tools

// Package tools pins containerd and its runc shim, which the real node runs
// (containerd 2: image volumes, which held copies mount, need it), so `go
// mod tidy` keeps their dependencies.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
)
