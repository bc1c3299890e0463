//go:build tools

// Package tools pins the Kubernetes commands the test bed runs, so `go mod tidy`
// keeps their dependencies: kube-apiserver for every test; the kubelet,
// kube-controller-manager and kube-scheduler for the real node.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
