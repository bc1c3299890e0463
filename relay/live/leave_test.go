package live

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay/debugsession"
)

// A session leaves its relay once: the first exit asked for is the one it
// takes, a later one does nothing and returns only once the first is done.
func TestLeaveTakesTheFirstExitOnly(t *testing.T) {
	l := &Session{ended: make(chan struct{})}
	if l.Ending() {
		t.Fatal("a new session says it is ending")
	}
	inFirst, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := l.leave(releasing, func() error {
			close(inFirst)
			<-release
			return errors.New("the first exit's error")
		})
		first <- err
	}()
	<-inFirst
	if !l.Ending() {
		t.Fatal("a session being released does not say it is ending")
	}
	second := make(chan bool, 1)
	go func() {
		did, err := l.leave(endingHere, func() error { t.Error("a second exit ran"); return nil })
		if err != nil {
			t.Errorf("the second exit returned %v, want no error of its own", err)
		}
		second <- did
	}()
	select {
	case <-second:
		t.Fatal("the second exit returned before the first was done")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-first; err == nil || err.Error() != "the first exit's error" {
		t.Fatalf("the first exit returned %v, want its own error", err)
	}
	if did := <-second; did {
		t.Fatal("the second exit says it ran")
	}
	if got := exit(l.exit.Load()); got != releasing {
		t.Fatalf("the session left by %d, want releasing (%d)", got, releasing)
	}
	select {
	case <-l.Ended():
	default:
		t.Fatal("Ended is not closed after the session left")
	}
}

// Enforce says why it ended a session only when its own end was the one
// made: a session a person ended first, as its hard stop came, reports
// no reason of Enforce's, and the audit's one end stays the person's.
func TestWatchReportsOnlyTheEndItMade(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	passed := metav1.NewTime(clk.Now().Add(-time.Minute))
	stream, _, _ := debugsession.NewStream(nil, func([]byte) {})
	l := &Session{Session: &v1alpha1.Session{Status: v1alpha1.SessionStatus{Deadline: &passed}},
		r: &debugsession.Runner{Clock: clk}, out: newFanout(clk.Now()), stream: stream, ended: make(chan struct{})}
	l.lastInput.Store(clk.Now().UnixNano())
	if did, _ := l.leave(endingHere, func() error { return nil }); !did {
		t.Fatal("the person's end did not run")
	}

	type watched struct {
		reason v1alpha1.EndReason
		err    error
	}
	done := make(chan watched, 1)
	go func() {
		reason, err := l.Enforce(context.Background(), debugsession.Limits{Idle: time.Hour, Disconnect: time.Hour, Heartbeat: time.Hour, Flush: time.Hour})
		done <- watched{reason, err}
	}()
	for {
		select {
		case got := <-done:
			if got.reason != "" || got.err != nil {
				t.Fatalf("Enforce returned (%q, %v) for a session a person had ended, want no reason of its own", got.reason, got.err)
			}
			return
		case <-time.After(10 * time.Millisecond):
			clk.Step(time.Second)
		}
	}
}
