//go:build tools

// Package tools pins the Rekor v2 server this module builds.
package tools

import _ "github.com/sigstore/rekor-tiles/v2/cmd/rekor-server/posix"
