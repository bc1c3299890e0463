package debugsession

import (
	"errors"
	"testing"
	"time"
)

// A session leaves its relay once: the first exit asked for is the one it
// takes, a later one does nothing and returns only once the first is done.
func TestLeaveTakesTheFirstExitOnly(t *testing.T) {
	l := &Live{ended: make(chan struct{})}
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
