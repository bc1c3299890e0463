package client

import (
	"go/build"
	"os/exec"
	"slices"
	"strings"
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

// TestWireAndClientLinkNoServer: what relay/wire and relay/client link,
// all of it. Of this module, only the API's types, the terminal's frames
// and the transcript's types; nothing that stores, logs or serves (the
// recording store, the audit log, Rekor, the server, controllers), so a
// client of the API stays small and a new import of the server's side
// fails here.
func TestWireAndClientLinkNoServer(t *testing.T) {
	const module = "github.com/tower-dev/breakglass/"
	mayLink := []string{"api/v1alpha1", "evidence/transcript", "relay/terminal", "relay/wire", "relay/client"}
	neverLink := []string{"github.com/aws/", "github.com/sigstore/", "sigs.k8s.io/controller-runtime", "k8s.io/client-go/", "k8s.io/apiserver/"}
	out, err := exec.Command("go", "list", "-deps", module+"relay/wire", module+"relay/client").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list named only %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		if own, ok := strings.CutPrefix(d, module); ok && !slices.Contains(mayLink, own) {
			t.Errorf("relay/wire or relay/client links %s", d)
		}
		for _, never := range neverLink {
			if strings.HasPrefix(d, never) {
				t.Errorf("relay/wire or relay/client links %s", d)
			}
		}
	}
	t.Logf("relay/wire and relay/client link %d packages", len(deps))
}
