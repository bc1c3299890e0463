package session

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/client"
	"github.com/tower-dev/breakglass/relay/wire"
)

func TestExitCodes(t *testing.T) {
	for want, err := range map[int]error{
		ExitFailed:   errors.New("connection refused"),
		ExitUsage:    fmt.Errorf("wrapped: %w", UsageError(errors.New("unknown flag"))),
		ExitRefused:  &client.Error{Status: 403, Reason: "Forbidden"},
		ExitNotFound: fmt.Errorf("get: %w", &client.Error{Status: 404, Reason: "NotFound"}),
		ExitDenied:   &exitError{ExitDenied, errors.New("denied")},
		ExitTimeout:  &exitError{ExitTimeout, errors.New("not decided")},
	} {
		if got := ExitCode(err); got != want {
			t.Errorf("%v: exit %d, want %d", err, got, want)
		}
	}
	if ExitCode(&client.Error{Status: 500}) != ExitFailed || ExitCode(&client.Error{Status: 400}) != ExitUsage || ExitCode(nil) != 0 {
		t.Error("500, 400 or nil mapped wrongly")
	}
}

// TestWideTable: ages as kubectl prints them, the approver, what was
// granted, and when the session ends or ended.
func TestWideTable(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	active := wire.SessionView{Cluster: "prod", Namespace: "shop", Name: "s-1", Created: metav1.NewTime(now.Add(-200 * time.Minute)),
		Spec: v1alpha1.SessionSpec{TargetPod: "web-1", Mode: v1alpha1.ModeLive, Requester: "alice@example.com", Reason: "500s"},
		Status: v1alpha1.SessionStatus{Phase: v1alpha1.PhaseActive, Approval: &v1alpha1.Approval{By: "bob@example.com", KeepPod: true},
			Deadline: &metav1.Time{Time: now.Add(25 * time.Minute)}}}
	ended := active
	ended.Name, ended.Created = "s-2", metav1.NewTime(now.Add(-49*time.Hour))
	ended.Status = v1alpha1.SessionStatus{Phase: v1alpha1.PhaseEnded, End: &v1alpha1.End{Reason: v1alpha1.EndIdle, At: metav1.NewTime(now.Add(-90 * time.Second))}}
	var out strings.Builder
	p, err := newPrinter("wide", &out)
	if err != nil {
		t.Fatal(err)
	}
	p.now = func() time.Time { return now }
	if err := p.print(active, ended); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{
		{"CLUSTER", "NAMESPACE", "NAME", "POD", "MODE", "PHASE", "REQUESTER", "AGE", "APPROVER", "PROCESS", "KEEP-POD", "ENDS", "REASON"},
		{"prod", "shop", "s-1", "web-1", "live", "Active", "alice@example.com", "3h20m", "bob@example.com", "false", "true", "in", "25m", "500s"},
		{"prod", "shop", "s-2", "web-1", "live", "Ended", "alice@example.com", "2d1h", "<none>", "false", "false", "ended", "90s", "ago", "(idle)", "500s"},
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d: %q, want %q", i, got, w)
		}
	}
	if _, err := newPrinter("toml", &out); ExitCode(err) != ExitUsage {
		t.Errorf("-o toml: %v", err)
	}
}
