//go:build tools

// Package tools pins the code generator and linter the Makefile builds into bin/.
package tools

import (
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
