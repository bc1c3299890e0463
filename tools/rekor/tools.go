//go:build tools

// Package tools pins rekor-server and Trillian's log server, log signer and
// createtree so `go mod tidy` keeps their dependencies.
package tools

import (
	_ "github.com/google/trillian/cmd/createtree"
	_ "github.com/google/trillian/cmd/trillian_log_server"
	_ "github.com/google/trillian/cmd/trillian_log_signer"
	_ "github.com/sigstore/rekor/cmd/rekor-server"
)
