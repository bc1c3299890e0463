package debugsession

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRunnerLinksNoInstallCode: the runner builds a session's objects
// with manifests/sessionobjects; what the chart installs (manifests, the
// CEL evaluator, the chart, the webhook) is not linked into the relay's
// runtime through it.
func TestRunnerLinksNoInstallCode(t *testing.T) {
	const module = "github.com/tower-dev/breakglass/"
	out, err := exec.Command("go", "list", "-deps", module+"relay/debugsession").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list named only %d packages", len(deps))
	}
	for _, d := range deps {
		switch strings.TrimPrefix(d, module) {
		case "manifests", "vap", "charts/breakglass", "webhook":
			t.Errorf("relay/debugsession links %s", d)
		}
	}
}
