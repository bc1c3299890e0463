//go:build tools

// Package tools pins versitygw so `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
