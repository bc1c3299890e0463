//go:build tools

// Package tools pins kube-apiserver v1.30 and the controller manager whose
// status controller type-checks policies, so `go mod tidy` keeps their
// dependencies.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
