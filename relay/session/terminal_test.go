package session

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

func TestFanoutDeliversEveryByteInOrder(t *testing.T) {
	f := newFanout(time.Now())
	v := f.subscribe(time.Now)
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
	slow := f.subscribe(time.Now) // never reads
	fast := f.subscribe(time.Now)
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
	// The slow viewer reads what was queued, then learns why it was cut off.
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
	v := f.subscribe(func() time.Time { return now })
	now = start.Add(time.Minute)
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if n, alone := f.watchers(); n != 0 || !alone.Equal(now) {
		t.Fatalf("after the viewer left: %d, %v", n, alone)
	}
}
