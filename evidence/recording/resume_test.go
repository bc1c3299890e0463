package recording

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestResumeAfterARelayDied: a relay dies mid-session (no Close: what it
// held unflushed is lost); the next one resumes the same recording, on the
// same clock from the session's start, with a marker where it took over;
// the finalized recording holds every segment of both, in order, with no
// gap or foreign segment, and the bytes the first relay had flushed plus
// everything after the marker.
func TestResumeAfterARelayDied(t *testing.T) {
	ctx := context.Background()
	first, store, clk := newTestRecorder(t, 128)
	started := clk.Now()
	var before bytes.Buffer
	for range 20 {
		line := []byte(strings.Repeat("a", 20) + "\r\n")
		before.Write(line)
		if err := first.Output(ctx, line); err != nil {
			t.Fatal(err)
		}
	}
	// The first relay dies here. A minute later another takes over.
	clk.Step(time.Minute)
	second, err := Resume(ctx, store, testRef, Options{RetainUntil: clk.Now().Add(time.Hour), SegmentBytes: 128, Clock: clk},
		started, "the relay restarted: output not yet written out before this may be missing")
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	if err := second.Output(ctx, []byte("after the restart\r\n")); err != nil {
		t.Fatal(err)
	}
	done, err := second.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := done.Manifest
	if len(m.MissingSegments) > 0 || len(m.ForeignSegments) > 0 {
		t.Fatalf("missing %v, foreign %v", m.MissingSegments, m.ForeignSegments)
	}
	raw, _ := store.Get(ctx, testRef.Prefix()+TranscriptFile, "")
	recs, err := ReadTranscript(raw)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	marker := -1
	for i, r := range recs {
		switch r.Kind {
		case KindMarker:
			marker = i
			if r.At != time.Minute || !strings.Contains(string(r.Data), "may be missing") {
				t.Fatalf("the marker: %+v", r)
			}
		case KindOutput:
			if marker >= 0 && r.At <= time.Minute {
				t.Fatalf("output after the marker at %s, before it", r.At)
			}
			out.Write(r.Data)
		}
	}
	got := out.String()
	flushed, ok := strings.CutSuffix(got, "after the restart\r\n")
	if marker < 0 || !ok || !strings.HasPrefix(before.String(), flushed) || before.Len()-len(flushed) > 128 {
		t.Fatalf("marker %d; recovered %q of %q", marker, got, before.String())
	}
	cast, _ := store.Get(ctx, testRef.Prefix()+CastFile, "")
	if !bytes.Contains(cast, []byte(`[60.000000,"m","the relay restarted`)) || bytes.Count(cast, []byte(`"version":2`)) != 1 {
		t.Fatalf("the cast: one header, and the marker event:\n%s", cast)
	}
	var played bytes.Buffer
	if err := Play(ctx, bytes.NewReader(cast), &played, 1e9); err != nil || !strings.HasSuffix(played.String(), "after the restart\r\n") {
		t.Fatalf("playing the resumed recording: %v %q", err, played.String())
	}

	// The old relay wrote nothing out before it died: the recording starts
	// at the resume, header and marker first.
	other := testRef
	other.Name = "s2"
	fresh, err := Resume(ctx, store, other, Options{Clock: clk}, started, "taken up")
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Output(ctx, []byte("hello\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cast, _ = store.Get(ctx, other.Prefix()+CastFile, "")
	if !bytes.HasPrefix(cast, []byte(`{"env":`)) || !bytes.Contains(cast, []byte(`"m","taken up"`)) {
		t.Fatalf("a recording resumed from nothing:\n%s", cast)
	}
}

// TestResumeSkipsANumberTheOldRelayTook: the old relay, alive but no
// longer running the session, writes a segment after the new one took it
// up; the new one's next segment takes the next number, and the old one's
// is kept out of the recording as foreign, named in the manifest.
func TestResumeSkipsANumberTheOldRelayTook(t *testing.T) {
	ctx := context.Background()
	old, store, clk := newTestRecorder(t, 1<<20)
	started := clk.Now()
	if err := old.Output(ctx, []byte("before\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := old.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	taken, err := Resume(ctx, store, testRef, Options{RetainUntil: clk.Now().Add(time.Hour), SegmentBytes: 1 << 20, Clock: clk}, started, "taken up")
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Output(ctx, []byte("late\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := old.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := taken.Output(ctx, []byte("after\r\n")); err != nil {
		t.Fatal(err)
	}
	done, err := taken.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := done.Manifest
	if len(m.ForeignSegments) != 2 || len(m.MissingSegments) != 1 {
		t.Fatalf("foreign %v, missing %v: want the old relay's late segment (both parts) foreign, and its number a marked gap", m.ForeignSegments, m.MissingSegments)
	}
	raw, _ := store.Get(ctx, testRef.Prefix()+TranscriptFile, "")
	if bytes.Contains(raw, []byte("late")) || !bytes.Contains(raw, []byte("before")) || !bytes.Contains(raw, []byte("after")) {
		t.Fatalf("the transcript: %q", raw)
	}
}
