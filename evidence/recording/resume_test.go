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

	// Nothing to continue: refused.
	other := testRef
	other.Name = "s2"
	if _, err := Resume(ctx, store, other, Options{Clock: clk}, started, "x"); err == nil {
		t.Fatal("resumed a recording that has no segments")
	}
}
