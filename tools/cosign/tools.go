//go:build tools

// Package tools pins the cosign CLI this module builds.
package tools

import _ "github.com/sigstore/cosign/v3/cmd/cosign"
