package recording

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzPlay: any file handed to `recording play` is played or refused at
// the line it breaks; never a panic or a hang.
func FuzzPlay(f *testing.F) {
	for _, seed := range []string{
		"{\"version\":2,\"width\":80,\"height\":24}\n[0.1,\"o\",\"hello\\r\\n\"]\n[0.2,\"i\",\"ls\\r\"]\n[0.3,\"r\",\"100x30\"]\n",
		"{\"version\":1}\n", "", "{\"version\":2}\n[1e308,\"o\",\"late\"]\n", "{\"version\":2}\n[-5,\"o\",\"early\"]\n",
		"{\"version\":2}\n[0,\"o\"]\n", "{\"version\":2}\n[\"0\",\"o\",\"x\"]\n", "{\"version\":2}\nnot json\n",
		"{\"version\":2}\n[0,\"o\",\"\\u001b[31mred\"]\n", strings.Repeat("[", 100),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, cast []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		var out bytes.Buffer
		err := Play(ctx, bytes.NewReader(cast), &out, 1e9)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !strings.HasPrefix(err.Error(), "line ") && err.Error() != "an empty recording" &&
			!strings.Contains(err.Error(), "token too long") {
			t.Fatalf("a refusal that does not say where: %v", err)
		}
	})
}

// FuzzRecordThenPlay: whatever a container writes, however the writes are
// split, the transcript holds exactly those bytes, and the recording plays
// them back as written when they are text (invalid UTF-8 is replaced in the
// cast, which is text; the transcript is the byte-exact evidence).
func FuzzRecordThenPlay(f *testing.F) {
	f.Add("hello\r\n", "world", uint8(3))
	f.Add("caf\u00e9 \U0001F600", "\x1b[2J\x1b[H", uint8(1))
	f.Add("", "only the second", uint8(0))
	f.Fuzz(func(t *testing.T, first, second string, split uint8) {
		r, store, clk := newTestRecorder(t, 64)
		ctx := context.Background()
		// Split the first write anywhere, even inside a UTF-8 sequence.
		cut := 0
		if len(first) > 0 {
			cut = int(split) % (len(first) + 1)
		}
		for _, p := range []string{first[:cut], first[cut:], second} {
			if p == "" {
				continue
			}
			if err := r.Output(ctx, []byte(p)); err != nil {
				t.Fatal(err)
			}
			clk.Step(time.Millisecond)
		}
		if err := r.Input(ctx, []byte("typed")); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
		raw, err := store.Get(ctx, testRef.Prefix()+TranscriptFile, "")
		if err != nil {
			t.Fatal(err)
		}
		records, err := ReadTranscript(raw)
		if err != nil {
			t.Fatalf("our own transcript: %v", err)
		}
		var written []byte
		for _, rec := range records {
			if rec.Kind == KindOutput {
				written = append(written, rec.Data...)
			}
		}
		if string(written) != first+second {
			t.Fatalf("the transcript holds %q, the container wrote %q", written, first+second)
		}
		if !utf8.ValidString(first + second) {
			return
		}
		cast, err := store.Get(ctx, testRef.Prefix()+CastFile, "")
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Play(ctx, bytes.NewReader(cast), &out, 1e9); err != nil {
			t.Fatalf("playing our own recording: %v", err)
		}
		if out.String() != first+second {
			t.Fatalf("played %q, the container wrote %q", out.String(), first+second)
		}
	})
}

// FuzzParseManifest: a manifest read from the store or handed to a
// reviewer is parsed or refused, naming no file it does not hold.
func FuzzParseManifest(f *testing.F) {
	for _, seed := range []string{
		`{"version":2,"session":"shop/s1","cluster":"prod","namespace":"shop","name":"s1","uid":"u","started":"2026-11-30T10:00:00Z","segments":1,"endedAbnormally":false,"files":{"recording.cast":{"sha256":"00","size":1}}}`,
		`{"files":{}}`, `{"files":null}`, `[]`, `{"files":{"../../etc/passwd":{"sha256":"x","size":-1}}}`, `{"started":"yesterday","files":{"a":{}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := ParseManifest(body)
		if err != nil {
			if !strings.HasPrefix(err.Error(), ManifestFile+": ") {
				t.Fatalf("a refusal that does not name the manifest: %v", err)
			}
			return
		}
		if len(m.Files) == 0 {
			t.Fatal("a manifest naming no files was accepted")
		}
	})
}

// FuzzReadTranscript: a transcript handed to a reviewer decodes or is
// refused; what decodes encodes back to records that decode the same.
func FuzzReadTranscript(f *testing.F) {
	var seed bytes.Buffer
	writeRecord(&seed, KindOutput, time.Second, []byte("hello"))
	writeRecord(&seed, KindInput, 2*time.Second, []byte("ls\r"))
	writeRecord(&seed, KindResize, 3*time.Second, []byte("120x40"))
	f.Add(seed.Bytes())
	f.Add([]byte{KindOutput, 0x80, 0x00, 0x01, 'x'})
	f.Add([]byte{KindOutput, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte("not a transcript"))
	f.Fuzz(func(t *testing.T, b []byte) {
		records, err := ReadTranscript(b)
		if err != nil {
			return
		}
		var again bytes.Buffer
		for _, r := range records {
			writeRecord(&again, r.Kind, r.At, r.Data)
		}
		back, err := ReadTranscript(again.Bytes())
		if err != nil || len(back) != len(records) {
			t.Fatalf("re-encoded records do not decode: %v", err)
		}
		for i := range back {
			if back[i].Kind != records[i].Kind || back[i].At != records[i].At || !bytes.Equal(back[i].Data, records[i].Data) {
				t.Fatalf("record %d: %+v became %+v", i, records[i], back[i])
			}
		}
	})
}
