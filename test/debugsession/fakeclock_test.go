package debugsession_test

import (
	"context"
	"io"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/relay/debugsession"
	"github.com/tower-dev/breakglass/relay/live"
	"github.com/tower-dev/breakglass/relay/wire"
)

// requester is the one terminal the sessions here are watched from: the
// requester's, typing.
var requester = wire.Attached{Name: "alice", Typing: true}

// onFakeClock is an approved session started in its own namespace by a
// runner whose clock the test moves.
type onFakeClock struct {
	s     *v1alpha1.Session
	r     *debugsession.Runner
	run   *live.Session
	clock *clocktesting.FakeClock
}

// startOnFakeClock starts an approved session in ns (keeping its pod if
// keepPod) on a fake clock.
func startOnFakeClock(t *testing.T, ns string, keepPod bool) *onFakeClock {
	t.Helper()
	f := &onFakeClock{s: approvedSession(t, ns, keepPod), r: runner(t, &recording.Dir{Root: t.TempDir()}, nil),
		clock: clocktesting.NewFakeClock(time.Now())}
	f.r.Clock = f.clock
	run, err := live.Start(context.Background(), f.r, f.s)
	if err != nil {
		t.Fatal(err)
	}
	f.run = run
	return f
}

// watchOutput is a viewer reading the terminal to its end.
func (f *onFakeClock) watchOutput() {
	v := f.run.Output(requester)
	go func() { _, _ = io.Copy(io.Discard, v) }()
}

// watch runs the session's limits; the channel has why they ended it ("" for
// a let-go).
func (f *onFakeClock) watch(t *testing.T, limits debugsession.Limits) <-chan v1alpha1.EndReason {
	ended := make(chan v1alpha1.EndReason, 1)
	go func() {
		reason, err := f.run.Enforce(context.Background(), limits)
		if err != nil {
			t.Errorf("Enforce: %v", err)
		}
		ended <- reason
	}()
	return ended
}

// waitLooking waits until the session's loop waits on the clock: it has
// looked at the time as it now is.
func (f *onFakeClock) waitLooking() {
	for !f.clock.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
}

// step moves the clock on by d once the loop waits on it.
func (f *onFakeClock) step(d time.Duration) {
	f.waitLooking()
	f.clock.Step(d)
}
