// Package tools says where the programs the local plane runs are: what
// make tools builds from module sources (etcd, kube-apiserver, the node's
// programs, Rekor), beside the repository they belong to.
package tools

import (
	"os"
	"path/filepath"
	"runtime"
)

// Root is the repository's root, from this file's place in it.
var Root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}()

// BinDir is where make tools puts the programs it builds:
// $KUBEBUILDER_ASSETS, or bin/ at the repository's root.
func BinDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	return filepath.Join(Root, "bin")
}

// OpenAPIDir is where make openapi-specs puts each version's documents.
func OpenAPIDir() string { return filepath.Join(BinDir(), "openapi") }
