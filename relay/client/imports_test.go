package client

import (
	"go/build"
	"slices"
	"testing"
)

// The client speaks the relay's API through relay/wire: importing the
// server for its types would build all of it into the kubectl plugin.
func TestClientDoesNotImportTheServer(t *testing.T) {
	for _, dir := range []string{".", "../../cmd/kubectl-breakglass/session"} {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(p.Imports, "github.com/tower-dev/breakglass/relay") {
			t.Errorf("%s imports github.com/tower-dev/breakglass/relay; use relay/wire", p.ImportPath)
		}
	}
}
