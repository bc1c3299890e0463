package live

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tower-dev/breakglass/relay/wire"
)

func TestFanoutDeliversEveryByteInOrder(t *testing.T) {
	f := newFanout(time.Now())
	v := f.subscribe(watcher, time.Now, true)
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
	slow := f.subscribe(watcher, time.Now, true) // never reads
	fast := f.subscribe(watcher, time.Now, true)
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
	v := f.subscribe(watcher, func() time.Time { return now }, true)
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
	early := f.subscribe(watcher, time.Now, true)
	var all bytes.Buffer
	all.WriteString("$ ")
	for i := range 400 {
		line := []byte(strings.Repeat(string(rune('a'+i%26)), 40) + "\r\n")
		all.Write(line)
		f.write(line)
	}
	late := f.subscribe(watcher, time.Now, true)
	fromNow := f.subscribe(watcher, time.Now, false)
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
		v := f.subscribe(watcher, time.Now, true)
		f.closeWith(moved)
		if _, err := io.ReadAll(v); !errors.Is(err, moved) {
			t.Fatalf("round %d: the viewer read %v, want its reason", i, err)
		}
	}
}

var watcher = wire.Attached{Name: "bob@example.com"}

// The viewers are the one count of who has the terminal open: the people
// shown (each once, the requester first), the watchers a moderated session
// waits for, and a word to the moderation hook at each coming and going,
// a viewer cut off for being too slow among them.
func TestFanoutCountsWhoHasTheTerminalOpen(t *testing.T) {
	f := newFanout(time.Now())
	told := make(chan wire.Attached, 16)
	f.onChange(func(who wire.Attached) { told <- who })
	typing, carol := wire.Attached{Name: "alice@example.com", Typing: true}, wire.Attached{Name: "carol@example.com"}
	req := f.subscribe(typing, time.Now, true)
	go func() { _, _ = io.Copy(io.Discard, req) }()
	bob1 := f.subscribe(watcher, time.Now, true)
	go func() { _, _ = io.Copy(io.Discard, bob1) }()
	bob2 := f.subscribe(watcher, time.Now, true)
	go func() { _, _ = io.Copy(io.Discard, bob2) }()
	slow := f.subscribe(carol, time.Now, true) // never reads
	// Told off the subscriber's path, so in any order.
	var came []wire.Attached
	for range 4 {
		came = append(came, <-told)
	}
	slices.SortFunc(came, func(a, b wire.Attached) int { return strings.Compare(a.Name, b.Name) })
	if want := []wire.Attached{typing, watcher, watcher, carol}; !slices.Equal(came, want) {
		t.Fatalf("told of %+v coming, want %+v", came, want)
	}
	if got, want := f.people(), []wire.Attached{typing, watcher, carol}; !slices.Equal(got, want) {
		t.Fatalf("people: %+v, want %+v", got, want)
	}
	if n := f.moderators(); n != 3 {
		t.Fatalf("%d watchers' terminals, want 3 (bob's two and carol's)", n)
	}
	_ = bob1.Close()
	if got := <-told; got != watcher {
		t.Fatalf("told of %+v leaving, want bob", got)
	}
	if n := f.moderators(); n != 2 {
		t.Fatalf("%d watchers' terminals after one of bob's closed, want 2", n)
	}
	// The others leave; carol, who never reads, is cut off once her
	// queue is full.
	_ = req.Close()
	_ = bob2.Close()
	for range 2 {
		<-told
	}
	for i := 0; i <= viewerBuffer+1; i++ {
		f.write([]byte("x"))
	}
	select {
	case got := <-told:
		if got != carol {
			t.Fatalf("told of %+v cut off, want carol", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nobody was told of the slow viewer cut off")
	}
	if got := f.people(); len(got) != 0 || f.moderators() != 0 {
		t.Fatalf("people after carol was cut off: %+v, want none", got)
	}
	_ = slow.Close()
}
