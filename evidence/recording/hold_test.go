package recording

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// refusing is a store that refuses writes while down, as one whose
// endpoint is unreachable or whose disk is full does. (test/faults fills
// a real disk.)
type refusing struct {
	Store
	down atomic.Bool
	// only, when set, is the suffix of the keys refused (the disk filling
	// between a segment's two halves).
	only string
}

var errRefused = errors.New("no space left on device")

func (s *refusing) Put(ctx context.Context, key string, data []byte, retainUntil time.Time) (string, error) {
	if s.down.Load() && strings.HasSuffix(key, s.only) {
		return "", errRefused
	}
	return s.Store.Put(ctx, key, data, retainUntil)
}

func newHoldingRecorder(t *testing.T, holdFor time.Duration) (*Recorder, *refusing) {
	t.Helper()
	store := &refusing{Store: &Dir{Root: t.TempDir()}}
	r, err := New(context.Background(), store, testRef, Options{RetainUntil: time.Now().Add(time.Hour),
		SegmentBytes: 64, HoldBytes: 4096, HoldFor: holdFor})
	if err != nil {
		t.Fatal(err)
	}
	return r, store
}

// TestStoreAwayHoldsTheTerminalAndLosesNothing: while the store refuses
// segments, what the terminal carries is kept (up to HoldBytes), then the
// writer is held; when the store comes back every byte is written, in
// order, and the recording finalizes whole.
func TestStoreAwayHoldsTheTerminalAndLosesNothing(t *testing.T) {
	r, store := newHoldingRecorder(t, time.Minute)
	ctx := context.Background()
	var want bytes.Buffer
	write := func(p []byte) error {
		want.Write(p)
		return r.Output(ctx, p)
	}
	if err := write([]byte("before the outage\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	store.down.Store(true)
	line := bytes.Repeat([]byte("x"), 99)
	for range 15 { // about 3.3 KiB kept (transcript and cast): the writer not held
		if err := write(line); err != nil {
			t.Fatalf("a write kept while the store is away: %v", err)
		}
	}
	if err := r.Flush(ctx); err == nil {
		t.Fatal("a flush to a store that refuses it succeeded")
	}
	held := make(chan error, 1)
	go func() { // past HoldBytes: held
		var err error
		for i := 0; i < 5 && err == nil; i++ {
			err = write(line)
		}
		held <- err
	}()
	select {
	case err := <-held:
		t.Fatalf("the write past HoldBytes returned (%v) while the store was away: it should wait", err)
	case <-time.After(1200 * time.Millisecond):
	}
	store.down.Store(false)
	select {
	case err := <-held:
		if err != nil {
			t.Fatalf("the held write once the store is back: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held write did not go on once the store came back")
	}
	if err := write([]byte("\r\nafter\r\n")); err != nil {
		t.Fatal(err)
	}
	done, err := r.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := transcriptOutput(t, store, done.Manifest)
	if got != want.String() || len(done.Manifest.MissingSegments) > 0 {
		t.Fatalf("recorded %d bytes (missing segments %v), want the %d written", len(got), done.Manifest.MissingSegments, want.Len())
	}
}

// TestStoreAwayTooLongFailsTheRecording: a store that stays away past
// HoldFor fails the held writer and the close, saying since when.
func TestStoreAwayTooLongFailsTheRecording(t *testing.T) {
	r, store := newHoldingRecorder(t, time.Second)
	ctx := context.Background()
	store.down.Store(true)
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		err = r.Output(ctx, bytes.Repeat([]byte("y"), 100))
	}
	if err == nil || !strings.Contains(err.Error(), "refused it since") || !errors.Is(err, errRefused) {
		t.Fatalf("writing to a store away past HoldFor: %v", err)
	}
	if _, err := r.Close(ctx); err == nil || !errors.Is(err, errRefused) {
		t.Fatalf("closing with the store away: %v", err)
	}
}

// TestQuietSessionWithTheStoreAwayFailsInTime: little output, far below
// HoldBytes, still fails once the store has refused segments for HoldFor:
// nothing is kept unrecorded longer than that.
func TestQuietSessionWithTheStoreAwayFailsInTime(t *testing.T) {
	r, store := newHoldingRecorder(t, 300*time.Millisecond)
	ctx := context.Background()
	store.down.Store(true)
	if err := r.Output(ctx, []byte("ls\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(ctx); err == nil {
		t.Fatal("a flush to a store that refuses it succeeded")
	}
	if !r.Held() {
		t.Fatal("the recorder says it holds nothing unwritten")
	}
	time.Sleep(400 * time.Millisecond)
	if err := r.Input(ctx, []byte("x")); err == nil || !strings.Contains(err.Error(), "refused segments since") {
		t.Fatalf("a keystroke after HoldFor with the store away: %v", err)
	}
}

// TestHalfWrittenSegmentKeepsEveryEvent: the disk fills between a
// segment's cast and its transcript; what is recorded meanwhile is neither
// lost from the cast nor duplicated, and the two halves agree once the
// store takes writes again.
func TestHalfWrittenSegmentKeepsEveryEvent(t *testing.T) {
	store := &refusing{Store: &Dir{Root: t.TempDir()}, only: ".raw"}
	r, err := New(context.Background(), store, testRef, Options{RetainUntil: time.Now().Add(time.Hour), SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var want bytes.Buffer
	write := func(s string) {
		want.WriteString(s)
		if err := r.Output(ctx, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	write("one ")
	store.down.Store(true)
	if err := r.Flush(ctx); err == nil {
		t.Fatal("the transcript half was refused, yet the flush succeeded")
	}
	write("two ")
	write("three ")
	store.down.Store(false)
	write("four")
	done, err := r.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cast, err := ReadFile(ctx, store, testRef, done.Manifest, CastFile)
	if err != nil {
		t.Fatal(err)
	}
	var inCast strings.Builder
	for _, ev := range castEvents(t, cast) {
		if ev[1] == "o" {
			inCast.WriteString(ev[2].(string))
		}
	}
	inRaw := transcriptOutput(t, store, done.Manifest)
	if inCast.String() != want.String() || inRaw != want.String() || len(done.Manifest.MissingSegments) > 0 {
		t.Fatalf("cast %q, transcript %q, missing %v; want %q in both", inCast.String(), inRaw, done.Manifest.MissingSegments, want.String())
	}
}

// transcriptOutput is the output a finalized recording's transcript holds,
// read through its manifest.
func transcriptOutput(t *testing.T, store Store, m Manifest) string {
	t.Helper()
	raw, err := ReadFile(context.Background(), store, testRef, m, TranscriptFile)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ReadTranscript(raw)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, rec := range recs {
		if rec.Kind == KindOutput {
			out.Write(rec.Data)
		}
	}
	return out.String()
}
