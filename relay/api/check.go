package api

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/wire"
)

// The bounds the chart installs; the cluster checks its own again.
const (
	MinDuration = 15 * time.Minute
	MaxDuration = 75 * time.Minute
	MaxReason   = wire.MaxReason
)

var goDuration = regexp.MustCompile(`^([0-9]+h)?([0-9]+m)?([0-9]+s)?$`)

// CheckRequest says what is wrong with a request, or how long it is for.
func CheckRequest(q *wire.Request) (time.Duration, error) {
	var errs []string
	if msgs := validation.IsDNS1123Subdomain(q.Pod); q.Pod == "" || len(msgs) > 0 {
		errs = append(errs, fmt.Sprintf("pod: %q is not a pod name", q.Pod))
	}
	if q.Container != "" && len(validation.IsDNS1123Label(q.Container)) > 0 {
		errs = append(errs, fmt.Sprintf("container: %q is not a container name", q.Container))
	}
	switch q.Mode {
	case v1alpha1.ModeLive, v1alpha1.ModeCopy, v1alpha1.ModeHeldCopy:
	default:
		errs = append(errs, fmt.Sprintf("mode: %q is not one of live, copy, heldCopy", q.Mode))
	}
	if q.ProcessAccess && q.Container == "" {
		errs = append(errs, "container: process access names the app container whose processes it sees")
	}
	d, err := time.ParseDuration(q.Duration)
	switch {
	case err != nil || !goDuration.MatchString(q.Duration):
		errs = append(errs, fmt.Sprintf("duration: %q is not a duration such as 30m", q.Duration))
	case d < MinDuration || d > MaxDuration:
		errs = append(errs, fmt.Sprintf("duration: a session lasts from %s to %s, not %s", MinDuration, MaxDuration, d))
	}
	if r := strings.TrimSpace(q.Reason); r == "" || len(q.Reason) > MaxReason {
		errs = append(errs, fmt.Sprintf("reason: say why, in 1 to %d characters", MaxReason))
	}
	if len(errs) > 0 {
		return 0, BadRequest("%s", strings.Join(errs, "; "))
	}
	return d, nil
}

// CheckExtension says what is wrong with an ask, or how long it is for.
func CheckExtension(q *wire.ExtensionAsk) (time.Duration, error) {
	var errs []string
	d, err := time.ParseDuration(q.Duration)
	if err != nil || !goDuration.MatchString(q.Duration) || d <= 0 {
		errs = append(errs, fmt.Sprintf("duration: %q is not a duration such as 30m", q.Duration))
	}
	if r := strings.TrimSpace(q.Reason); r == "" || len(q.Reason) > MaxReason {
		errs = append(errs, fmt.Sprintf("reason: say why, in 1 to %d characters", MaxReason))
	}
	if len(errs) > 0 {
		return 0, BadRequest("%s", strings.Join(errs, "; "))
	}
	return d, nil
}

// CheckDecision says what is wrong with a decision's words.
func CheckDecision(d *wire.Decision) error {
	if len(d.Comment) > MaxReason || len(d.Reason) > MaxReason {
		return BadRequest("comment and reason are at most %d characters", MaxReason)
	}
	return nil
}

// CheckReview says what is wrong with a review's words.
func CheckReview(q *wire.Review) error {
	if strings.TrimSpace(q.Comment) == "" || len(q.Comment) > MaxReason {
		return BadRequest("comment: say what you found, in 1 to %d characters", MaxReason)
	}
	return nil
}
