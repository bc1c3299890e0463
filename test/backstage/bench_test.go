package backstage

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/localplane"
	"github.com/tower-dev/breakglass/policies"
	"github.com/tower-dev/breakglass/test/harness/measure"
	"github.com/tower-dev/breakglass/test/harness/prereq"
	"github.com/tower-dev/breakglass/test/harness/walkplan"
)

// approveRounds is how many approvals each front end is timed over.
const approveRounds = 5

// BenchmarkApproveToPrompt: bob approves alice's request and she starts
// it, in the console and in Tower by turns on one plane (a Ground
// cluster's copy, so the pod stays): from bob's click to alice's page
// showing the approval (pushed by the relay's event stream), to her
// terminal connected, to the first command's answer. The medians of each
// front end, and Tower's over the console's (docs/benchmarks.md).
func BenchmarkApproveToPrompt(b *testing.B) {
	prereq.Need(b, prereq.Browser...)
	info, _, logs := plane(b, localplane.Options{Profile: policies.Flight, Both: true})
	pods := map[string]string{}
	for _, c := range info.Clusters {
		pods[c.Name] = c.Pod
	}
	raw, _ := json.Marshal(map[string]any{"relay": info.RelayURL, "backstage": info.BackstageURL, "notifications": info.Notifications,
		"artifacts": b.TempDir(), "pods": pods, "rounds": approveRounds})
	b.ResetTimer()
	out, err := exec.Command("node", filepath.Join(walkplan.BrowserDir(), "walk", "bench.js"), string(raw)).Output()
	b.StopTimer()
	if err != nil {
		b.Fatalf("driving Chromium: %v\n%s\n%s", err, out, logs())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var r struct {
		OK      bool
		Error   string
		Samples map[string][]struct{ ApprovalShown, Connected, Answered float64 }
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil || !r.OK {
		b.Fatalf("the benchmark said: %s (%v)", out, err)
	}
	median := func(fe string, pick func(s struct{ ApprovalShown, Connected, Answered float64 }) float64) float64 {
		var d []time.Duration
		for _, s := range r.Samples[fe] {
			d = append(d, time.Duration(pick(s)*float64(time.Millisecond)))
		}
		return measure.Ms(measure.Quantile(d, 0.5))
	}
	for _, fe := range []string{"console", "backstage"} {
		if len(r.Samples[fe]) != approveRounds {
			b.Fatalf("%s: %d rounds, want %d", fe, len(r.Samples[fe]), approveRounds)
		}
		b.ReportMetric(median(fe, func(s struct{ ApprovalShown, Connected, Answered float64 }) float64 { return s.ApprovalShown }), fe+"-approval-shown-ms")
		b.ReportMetric(median(fe, func(s struct{ ApprovalShown, Connected, Answered float64 }) float64 { return s.Connected }), fe+"-connected-ms")
		b.ReportMetric(median(fe, func(s struct{ ApprovalShown, Connected, Answered float64 }) float64 { return s.Answered }), fe+"-answered-ms")
	}
	answered := func(s struct{ ApprovalShown, Connected, Answered float64 }) float64 { return s.Answered }
	b.ReportMetric(median("backstage", answered)/median("console", answered), "backstage/console")
}
