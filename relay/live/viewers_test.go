package live

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestFanoutDeliversEveryByteInOrder(t *testing.T) {
	f := newFanout(time.Now())
	v := f.subscribe(time.Now, true)
	var want bytes.Buffer
	got := make(chan []byte)
	go func() { b, _ := io.ReadAll(v); got <- b }()
	for i := 0; i < 500; i++ {
		chunk := bytes.Repeat([]byte{byte('a' + i%26)}, 100)
		want.Write(chunk)
		f.write(chunk)
	}
	f.close()
	if b := <-got; !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("the viewer got %d bytes, want %d in order", len(b), want.Len())
	}
}

func TestFanoutCutsOffASlowViewerWithoutBlocking(t *testing.T) {
	f := newFanout(time.Now())
	slow := f.subscribe(time.Now, true) // never reads
	fast := f.subscribe(time.Now, true)
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, fast); close(done) }()
	finished := make(chan struct{})
	go func() {
		for i := 0; i < 5*viewerBuffer; i++ {
			f.write([]byte("output"))
			if i%256 == 255 {
				time.Sleep(5 * time.Millisecond) // output arrives at a stream's pace, not in one burst
			}
		}
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("a viewer that does not read held up the terminal")
	}
	if n, _ := f.watchers(); n != 1 {
		t.Fatalf("%d viewers left, want the fast one", n)
	}
	// The slow viewer learns why it was cut off.
	_, err := io.Copy(io.Discard, slow)
	if !errors.Is(err, ErrTooSlow) {
		t.Fatalf("the slow viewer's end: %v", err)
	}
	f.close()
	<-done
}

func TestFanoutKnowsWhenNobodyWatches(t *testing.T) {
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	now := start
	f := newFanout(start)
	if n, alone := f.watchers(); n != 0 || !alone.Equal(start) {
		t.Fatalf("at the start: %d, %v", n, alone)
	}
	v := f.subscribe(func() time.Time { return now }, true)
	now = start.Add(time.Minute)
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if n, alone := f.watchers(); n != 0 || !alone.Equal(now) {
		t.Fatalf("after the viewer left: %d, %v", n, alone)
	}
}

// TestFanoutShowsAJoiningViewerTheRecentScreen: a viewer who joins late
// first reads the output's end (whole lines once the start is cut), then
// what follows, with nothing repeated or lost between the two.
func TestFanoutShowsAJoiningViewerTheRecentScreen(t *testing.T) {
	f := newFanout(time.Now())
	f.write([]byte("$ "))
	early := f.subscribe(time.Now, true)
	var all bytes.Buffer
	all.WriteString("$ ")
	for i := range 400 {
		line := []byte(strings.Repeat(string(rune('a'+i%26)), 40) + "\r\n")
		all.Write(line)
		f.write(line)
	}
	late := f.subscribe(time.Now, true)
	fromNow := f.subscribe(time.Now, false)
	f.write([]byte("after\r\n"))
	all.WriteString("after\r\n")
	f.close()
	gotEarly, _ := io.ReadAll(early)
	gotLate, _ := io.ReadAll(late)
	if got, _ := io.ReadAll(fromNow); string(got) != "after\r\n" {
		t.Fatalf("a viewer from now on read %q", got)
	}
	if !bytes.HasPrefix(gotEarly, []byte("$ ")) || !bytes.Equal(gotEarly, all.Bytes()) {
		t.Fatalf("the viewer who joined after the prompt read %d bytes from %q, want the whole %d", len(gotEarly), gotEarly[:min(10, len(gotEarly))], all.Len())
	}
	if len(gotLate) > replayBytes+len("after\r\n") || len(gotLate) < replayBytes/2 || !bytes.HasSuffix(all.Bytes(), gotLate) {
		t.Fatalf("the late viewer read %d bytes, not a suffix of the output of at most %d", len(gotLate), replayBytes)
	}
	if len(gotLate)%42 != len("after\r\n") {
		t.Fatalf("the late viewer's replay starts mid-line: %q", gotLate[:42])
	}
}

// TestFanoutEndsAViewerWithItsReason: a viewer ended with a reason (the
// session moved to another relay) reads that reason, never a plain end of
// output, however its pump and the end interleave: told "ended", a page
// would not reconnect.
func TestFanoutEndsAViewerWithItsReason(t *testing.T) {
	moved := errors.New("moved")
	for i := range 2000 {
		f := newFanout(time.Now())
		v := f.subscribe(time.Now, true)
		f.closeWith(moved)
		if _, err := io.ReadAll(v); !errors.Is(err, moved) {
			t.Fatalf("round %d: the viewer read %v, want its reason", i, err)
		}
	}
}
