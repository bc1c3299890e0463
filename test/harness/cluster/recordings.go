package cluster

import (
	"context"
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/evidence/recording"
)

// Transcript reads the byte-exact transcript of the recording at prefix
// in store: what was typed, what the terminal showed, and each resize.
func Transcript(t testing.TB, store recording.Store, prefix string) (in, out string, resizes []string) {
	t.Helper()
	raw, err := store.Get(context.Background(), prefix+recording.TranscriptFile, "")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := recording.ReadTranscript(raw)
	if err != nil {
		t.Fatal(err)
	}
	var typed, shown strings.Builder
	for _, r := range recs {
		switch r.Kind {
		case recording.KindInput:
			typed.Write(r.Data)
		case recording.KindOutput:
			shown.Write(r.Data)
		case recording.KindResize:
			resizes = append(resizes, string(r.Data))
		}
	}
	return typed.String(), shown.String(), resizes
}
