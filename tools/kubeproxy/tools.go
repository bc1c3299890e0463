//go:build tools

// Package tools pins kube-proxy, which the real node runs for its Services,
// so `go mod tidy` keeps its dependencies.
package tools

import _ "k8s.io/kubernetes/cmd/kube-proxy"
