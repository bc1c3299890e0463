package localplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Running is a plane brought up in the background (Background).
type Running struct {
	Info
	cancel context.CancelFunc
	done   <-chan error
	once   sync.Once
	err    error
}

// Stop stops the plane and returns Up's result once everything is
// stopped; called again, it returns the same.
func (r *Running) Stop() error {
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.done
	})
	return r.err
}

// StallLimit is how long Background waits for the next step to begin
// before it calls the plane hung. It is no measure of speed: on a cold or
// busy machine one step (a real node going Ready) takes minutes, and the
// steps catch what they wait on sooner themselves.
const StallLimit = 10 * time.Minute

// Background brings the plane up in the background and returns once it
// is, for tests that walk through it. It waits as long as the plane makes
// progress, and gives up only when no step has begun for StallLimit,
// naming the step it is stuck at (a step that waits on another process,
// such as another test's real node, is that process's to end).
// The plane runs until ctx ends or Stop is called. A plane that does not come up is stopped before Background
// returns. o.Ready and o.Progress are Background's own.
func Background(ctx context.Context, o Options, logs io.Writer) (*Running, error) {
	ctx, stop := context.WithCancel(ctx)
	ready := make(chan Info, 1)
	progress := make(chan Step, 64)
	done := make(chan error, 1)
	o.Ready = func(i Info) { ready <- i }
	o.Progress = func(s Step) {
		select {
		case progress <- s:
		default: // read as they come; a missed one is a later step's news
		}
	}
	go func() { done <- Up(ctx, o, logs) }()
	at, since := Step{What: "the first step"}, time.Now()
	check := time.NewTicker(time.Second)
	defer check.Stop()
	for {
		select {
		case info := <-ready:
			return &Running{Info: info, cancel: stop, done: done}, nil
		case err := <-done:
			stop()
			return nil, fmt.Errorf("the plane did not come up, at %s: %w", at.What, err)
		case at = <-progress:
			since = time.Now()
		case <-check.C:
			if stalled := time.Since(since); stalled > StallLimit && !at.Waiting {
				stop()
				return nil, errors.Join(fmt.Errorf("the plane made no progress for %s: stuck at %q, begun %s after the start",
					stalled.Round(time.Second), at.What, at.At.Round(time.Second)), <-done)
			}
		}
	}
}

// Report says how long the plane took to come up, step by step, the
// slowest named first: what to look at on a machine where it is slow.
func (i Info) Report() string {
	var slowest Step
	var b strings.Builder
	for _, s := range i.Steps {
		if s.Took > slowest.Took {
			slowest = s
		}
		fmt.Fprintf(&b, "\n%9s  %s", s.Took.Round(time.Millisecond), s.What)
	}
	return fmt.Sprintf("up in %s; the slowest step: %s (%s)%s", i.Started.Round(time.Millisecond), slowest.What, slowest.Took.Round(time.Millisecond), b.String())
}
