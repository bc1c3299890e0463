package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/client"
	"github.com/tower-dev/breakglass/relay/wire"
)

// Exit codes, stable for scripts (the session command's help lists them).
const (
	ExitFailed   = 1
	ExitUsage    = 2
	ExitRefused  = 3
	ExitNotFound = 4
	ExitDenied   = 5
	ExitTimeout  = 6
)

// usageError is a wrong command line.
type usageError struct{ error }

func (e *usageError) Unwrap() error { return e.error }

// UsageError marks err as a wrong command line (exit code 2).
func UsageError(err error) error { return &usageError{err} }

// exitError carries its own exit code.
type exitError struct {
	code int
	error
}

func (e *exitError) Unwrap() error { return e.error }

// ExitCode is the exit code for err.
func ExitCode(err error) int {
	var u *usageError
	var x *exitError
	var rel *client.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u):
		return ExitUsage
	case errors.As(err, &x):
		return x.code
	case errors.As(err, &rel) && rel.Status == http.StatusNotFound:
		return ExitNotFound
	case errors.As(err, &rel) && rel.Status == http.StatusBadRequest:
		return ExitUsage
	case errors.As(err, &rel) && rel.Status >= 400 && rel.Status < 500:
		return ExitRefused
	}
	return ExitFailed
}

// waitDecided waits until the session is no longer Pending: another person
// approved or denied it, or it ended. It says once what it waits for.
func waitDecided(ctx context.Context, c *client.Client, t client.Target, notes io.Writer, every, timeout time.Duration) (wire.SessionView, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	said := false
	for {
		v, err := c.Get(ctx, t)
		switch {
		case ctx.Err() != nil:
			return v, &exitError{ExitTimeout, fmt.Errorf("session %s was not decided within %s: it is still Pending (the request stays; kubectl breakglass session get %s)", t.Name, timeout, t.Name)}
		case err != nil:
			return v, err
		case v.Status.Phase == v1alpha1.PhaseDenied:
			return v, &exitError{ExitDenied, fmt.Errorf("session %s was denied by %s: %s", t.Name, v.Status.Denial.By, v.Status.Denial.Reason)}
		case v.Status.Phase == v1alpha1.PhaseEnded:
			return v, &exitError{ExitDenied, fmt.Errorf("session %s ended before it started: %s", t.Name, endReason(v))}
		case v.Status.Phase != v1alpha1.PhasePending:
			return v, nil
		case !said:
			said = true
			fmt.Fprintf(notes, "waiting for another person to approve session %s (Ctrl-C stops waiting; the request stays)\n", t.Name)
		}
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
}

func endReason(v wire.SessionView) string {
	if e := v.Status.End; e != nil {
		return fmt.Sprintf("%s by %s", e.Reason, e.By)
	}
	return "no reason recorded"
}

// startSession starts an approved session, saying what the relay does
// while the call runs: it returns once the terminal is attached.
func startSession(ctx context.Context, c *client.Client, t client.Target, notes io.Writer) (wire.SessionView, error) {
	fmt.Fprintf(notes, "starting session %s: the relay grants its debug role for the session's time, adds the debug container, waits for the node to run it, and attaches the recorded terminal\n", t.Name)
	began := time.Now()
	v, err := c.Start(ctx, t)
	if err == nil {
		fmt.Fprintf(notes, "started in %s\n", time.Since(began).Round(100*time.Millisecond))
	}
	return v, err
}
