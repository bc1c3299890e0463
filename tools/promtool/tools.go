//go:build tools

// Package tools pins promtool so `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
