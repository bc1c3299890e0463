package recording

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tower-dev/breakglass/evidence/tlog"
)

var testRef = Ref{Cluster: "prod", Namespace: "shop", Name: "s1", UID: "0b9f1e4c-uid"}

func newTestRecorder(t *testing.T, segmentBytes int) (*Recorder, *Dir, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	store := &Dir{Root: t.TempDir(), Now: clk.Now}
	r, err := New(context.Background(), store, testRef, Options{
		RetainUntil: clk.Now().Add(365 * 24 * time.Hour), SegmentBytes: segmentBytes, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return r, store, clk
}

// castEvents reads the asciicast's events after its header.
func castEvents(t *testing.T, cast []byte) [][3]any {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(cast))
	if !sc.Scan() {
		t.Fatal("no header")
	}
	var header map[string]any
	if err := json.Unmarshal(sc.Bytes(), &header); err != nil || header["version"] != float64(2) {
		t.Fatalf("header %q: %v", sc.Text(), err)
	}
	var out [][3]any
	for sc.Scan() {
		var ev [3]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event %q: %v", sc.Text(), err)
		}
		out = append(out, ev)
	}
	return out
}

func TestRecordsEveryByteAndDecodesSplitCharacters(t *testing.T) {
	r, store, clk := newTestRecorder(t, 1<<20)
	ctx := context.Background()
	steps := []struct {
		kind byte
		data string
	}{
		{KindOutput, "caf\xc3"}, // é cut in two
		{KindOutput, "\xa9 \xe2\x82"},
		{KindOutput, "\xac!"}, // € cut in three
		{KindInput, "ls\r"},
		{KindOutput, "\xff\xfebinary"}, // not UTF-8 at all
	}
	for _, s := range steps {
		clk.Step(100 * time.Millisecond)
		var err error
		if s.kind == KindInput {
			err = r.Input(ctx, []byte(s.data))
		} else {
			err = r.Output(ctx, []byte(s.data))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Resize(ctx, 120, 40); err != nil {
		t.Fatal(err)
	}
	done, err := r.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, body := done.Manifest, done.Body
	if err := m.Names(testRef); err != nil {
		t.Fatal(err)
	}
	cast, _ := store.Get(ctx, testRef.Prefix()+CastFile, "")
	var text strings.Builder
	var last float64
	for _, ev := range castEvents(t, cast) {
		at := ev[0].(float64)
		if at < last {
			t.Fatalf("timestamps go back: %v after %v", at, last)
		}
		last = at
		if ev[1] == "o" {
			text.WriteString(ev[2].(string))
		}
	}
	if got, want := text.String(), "café €!\uFFFDbinary"; got != want {
		t.Fatalf("the cast shows %q, want %q", got, want)
	}
	raw, _ := store.Get(ctx, testRef.Prefix()+TranscriptFile, "")
	recs, err := ReadTranscript(raw)
	if err != nil {
		t.Fatal(err)
	}
	var out, in bytes.Buffer
	for _, rec := range recs {
		switch rec.Kind {
		case KindOutput:
			out.Write(rec.Data)
		case KindInput:
			in.Write(rec.Data)
		}
	}
	if out.String() != "caf\xc3\xa9 \xe2\x82\xac!\xff\xfebinary" || in.String() != "ls\r" {
		t.Fatalf("the transcript is not byte-exact: %q / %q", out.String(), in.String())
	}
	if recs[len(recs)-1].Kind != KindResize || string(recs[len(recs)-1].Data) != "120x40" {
		t.Fatalf("the resize is not recorded: %+v", recs[len(recs)-1])
	}
	for name, want := range map[string][]byte{CastFile: cast, TranscriptFile: raw} {
		sum := sha256.Sum256(want)
		if m.Files[name].SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("the manifest's hash of %s does not match its bytes", name)
		}
	}
	stored, _ := store.Get(ctx, testRef.Prefix()+ManifestFile, "")
	if !bytes.Equal(stored, body) || m.EndedAbnormally {
		t.Fatal("the stored manifest differs, or says abnormal")
	}
}

func TestSegmentsStreamWhileRunningAndSurviveACrash(t *testing.T) {
	r, store, _ := newTestRecorder(t, 256)
	ctx := context.Background()
	var sent bytes.Buffer
	for i := 0; i < 50; i++ {
		line := []byte(strings.Repeat("x", 30) + "\r\n")
		sent.Write(line)
		if err := r.Output(ctx, line); err != nil {
			t.Fatal(err)
		}
	}
	segments, _ := store.List(ctx, testRef.Prefix()+"segments/")
	if len(segments) < 10 {
		t.Fatalf("only %d segment objects while the session runs", len(segments))
	}
	// The relay dies here: no Close. Someone else finalizes from the store alone.
	done, err := Finalize(ctx, store, Meta{Session: testRef, Abnormal: true})
	if err != nil {
		t.Fatal(err)
	}
	m := done.Manifest
	raw, _ := store.Get(ctx, testRef.Prefix()+TranscriptFile, "")
	recs, err := ReadTranscript(raw)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for _, rec := range recs {
		got.Write(rec.Data)
	}
	// At most the last, unflushed segment is lost.
	if !bytes.HasPrefix(sent.Bytes(), got.Bytes()) || sent.Len()-got.Len() > 256 {
		t.Fatalf("recovered %d of %d bytes", got.Len(), sent.Len())
	}
	if !m.EndedAbnormally {
		t.Fatal("not marked as ended abnormally")
	}
	if _, err := Finalize(ctx, store, Meta{Session: testRef, Abnormal: true}); err != nil {
		t.Fatalf("finalizing again: %v", err)
	}
}

func TestDirIsWriteOnce(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	d := &Dir{Root: t.TempDir(), Now: func() time.Time { return now }}
	ctx := context.Background()
	if _, err := d.Put(ctx, "a/b", []byte("one"), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Put(ctx, "a/b", []byte("two"), now.Add(time.Hour)); !errors.Is(err, ErrExists) {
		t.Fatalf("overwrite: %v", err)
	}
	if err := d.Delete(ctx, "a/b"); !errors.Is(err, ErrRetained) {
		t.Fatalf("delete under retention: %v", err)
	}
	if got, _ := d.Get(ctx, "a/b", ""); string(got) != "one" {
		t.Fatalf("got %q", got)
	}
	for _, bad := range []string{"../escape", "", "x.retain"} {
		if _, err := d.Put(ctx, bad, []byte("x"), now); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
	now = now.Add(2 * time.Hour)
	if err := d.Delete(ctx, "a/b"); err != nil {
		t.Fatalf("delete after retention: %v", err)
	}
}

func TestNoStoreNoRecording(t *testing.T) {
	_, err := New(context.Background(), &Dir{Root: "/proc/breakglass-no-such-store"}, testRef, Options{})
	if err == nil {
		t.Fatal("a recording started on a store that cannot be written")
	}
}

func TestReadTranscriptRefusesGarbage(t *testing.T) {
	var b bytes.Buffer
	writeRecord(&b, KindOutput, time.Second, []byte("hello"))
	good := b.Bytes()
	for name, data := range map[string][]byte{
		"truncated":    good[:len(good)-2],
		"unknown kind": append([]byte{'z'}, good[1:]...),
	} {
		if _, err := ReadTranscript(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestCastEventEscaping: the hand-written JSON escaping round-trips every
// control character, quote, backslash and multibyte character.
func TestCastEventEscaping(t *testing.T) {
	var text []byte
	for c := 0; c < 0x80; c++ {
		text = append(text, byte(c))
	}
	text = append(text, "é€😀\u2028\\\"<>&"...)
	var buf bytes.Buffer
	writeCastEvent(&buf, 1500*time.Millisecond, KindOutput, text)
	var ev []any
	if err := json.Unmarshal(buf.Bytes(), &ev); err != nil {
		t.Fatalf("%v: %q", err, buf.String())
	}
	if len(ev) != 3 || ev[0].(float64) != 1.5 || ev[1] != "o" || ev[2] != string(text) || !bytes.HasSuffix(buf.Bytes(), []byte("\n")) {
		t.Fatalf("decoded %q", ev)
	}
}

func TestRefRefusesPartsThatLeaveTheirPrefix(t *testing.T) {
	for _, bad := range []Ref{
		{Namespace: "shop", Name: "s1", UID: "u"},
		{Cluster: "prod", Namespace: "shop", Name: "s1"},
		{Cluster: "..", Namespace: "shop", Name: "s1", UID: "u"},
		{Cluster: "prod", Namespace: "shop/../x", Name: "s1", UID: "u"},
	} {
		if _, err := New(context.Background(), &Dir{Root: t.TempDir()}, bad, Options{}); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// A recording is read only as the session it names: a manifest and files
// copied under another session's key (another cluster, or a re-created
// Session with a new UID) are refused, and so is a file that is not the
// one the manifest names.
func TestReadChecksTheSessionAndTheHashes(t *testing.T) {
	r, store, _ := newTestRecorder(t, 1<<20)
	ctx := context.Background()
	if err := r.Output(ctx, []byte("secret output")); err != nil {
		t.Fatal(err)
	}
	done, err := r.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev := EvidenceOf(testRef, done, "", false)
	m, _, err := ReadManifest(ctx, store, testRef, ev)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(ctx, store, testRef, m, TranscriptFile); err != nil || len(got) == 0 {
		t.Fatalf("reading the transcript: %v", err)
	}
	for _, other := range []Ref{
		{Cluster: "staging", Namespace: "shop", Name: "s1", UID: testRef.UID},
		{Cluster: "prod", Namespace: "shop", Name: "s1", UID: "a-new-uid"},
	} {
		if _, _, err := ReadManifest(ctx, store, other, ev); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s read %s's recording: %v", other, testRef, err)
		}
		// Copied there by someone with the bucket's keys: the manifest says whose it is.
		for _, name := range []string{ManifestFile, CastFile, TranscriptFile} {
			data, _ := store.Get(ctx, testRef.Prefix()+name, "")
			if _, err := store.Put(ctx, other.Prefix()+name, data, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := ReadManifest(ctx, store, other, ev); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "is the recording of prod/shop/s1") {
			t.Errorf("a copy under %s: %v", other, err)
		}
	}
	forged := *ev
	forged.ManifestSHA256 = strings.Repeat("0", 64)
	if _, _, err := ReadManifest(ctx, store, testRef, &forged); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "not the session's") {
		t.Errorf("a manifest with another hash than the Session's: %v", err)
	}
	m.Files[CastFile] = FileDigest{SHA256: strings.Repeat("1", 64), Size: 3}
	if _, err := ReadFile(ctx, store, testRef, m, CastFile); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "the manifest says") {
		t.Errorf("a cast that is not the manifest's: %v", err)
	}
}

// TestPlantedSegmentsStayOut: someone with the store's keys adds a segment
// between the recorder's own (or hides one). The relay assembles only what
// it wrote; the sweeper only well-formed, numbered segments; each names
// what it left out or found missing.
func TestPlantedSegmentsStayOut(t *testing.T) {
	r, store, _ := newTestRecorder(t, 16)
	ctx := context.Background()
	for _, line := range []string{"first line of output\r\n", "second line of output\r\n"} {
		if err := r.Output(ctx, []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	segments := testRef.Prefix() + "segments/"
	for _, name := range []string{"00000000a.cast", "00000000a.raw", "00000050.cast", "00000050.raw"} {
		if _, err := store.Put(ctx, segments+name, []byte("rm -rf / # typed by nobody\r\n"), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	done, err := r.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cast, _ := store.Get(ctx, testRef.Prefix()+CastFile, "")
	if strings.Contains(string(cast), "typed by nobody") || !strings.Contains(string(cast), "second line") {
		t.Fatalf("the relay's recording holds what it did not record:\n%s", cast)
	}
	if len(done.Manifest.ForeignSegments) != 4 || len(done.Manifest.MissingSegments) != 0 {
		t.Fatalf("foreign %v, missing %v", done.Manifest.ForeignSegments, done.Manifest.MissingSegments)
	}

	// The sweeper's view: no list of what was written. The odd names stay
	// out; the well-formed 50 is taken, and the gap before it is recorded.
	swept := Ref{Cluster: "prod", Namespace: "shop", Name: "s1", UID: "another-uid"}
	for _, name := range []string{"00000000.cast", "00000000.raw", "00000000a.cast", "00000002.cast", "00000002.raw"} {
		if _, err := store.Put(ctx, swept.Prefix()+"segments/"+name, []byte("x"), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Finalize(ctx, store, Meta{Session: swept, Abnormal: true})
	if err != nil {
		t.Fatal(err)
	}
	if m := f.Manifest; m.Segments != 2 || len(m.MissingSegments) != 1 || m.MissingSegments[0] != 1 || len(m.ForeignSegments) != 1 {
		t.Fatalf("the sweeper's manifest: %d segments, missing %v, foreign %v", m.Segments, m.MissingSegments, m.ForeignSegments)
	}
}

// TestKeepBundleBesideAPlantedOne: a bundle planted under the usual name
// does not stop the relay's own from being kept, under a name of its own.
func TestKeepBundleBesideAPlantedOne(t *testing.T) {
	store := &Dir{Root: t.TempDir()}
	ctx := context.Background()
	retain := time.Now().Add(time.Hour)
	if _, err := store.Put(ctx, testRef.Prefix()+tlog.BundleFile, []byte(`{"uuid":"planted"}`), retain); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(ctx, testRef.Prefix()+tlog.SigstoreBundleFile, []byte(`{"mediaType":"planted"}`), retain); err != nil {
		t.Fatal(err)
	}
	// A real anchor (evidence/tlog's fixture): its Sigstore form needs the log's entry.
	raw, err := os.ReadFile("../tlog/testdata/" + tlog.BundleFile)
	if err != nil {
		t.Fatal(err)
	}
	b := &tlog.Bundle{}
	if err := json.Unmarshal(raw, b); err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile("../tlog/testdata/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	key, err := KeepBundle(ctx, store, testRef, b, manifest, retain)
	if err != nil || key != testRef.Prefix()+AltBundleName(b.UUID) {
		t.Fatalf("kept at %q: %v", key, err)
	}
	kept, _ := store.Get(ctx, key, "")
	if !strings.Contains(string(kept), b.UUID) {
		t.Fatal("the relay's bundle is not where it says")
	}
	sigstore, err := store.Get(ctx, testRef.Prefix()+AltSigstoreBundleName(b.UUID), "")
	if err != nil {
		t.Fatalf("the relay's Sigstore bundle is not beside the planted one: %v", err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(b.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tlog.VerifySigstore(sigstore, manifest, b.RekorPublicKey, tlog.Signer{Key: pub}); err != nil {
		t.Fatalf("the kept Sigstore bundle does not verify: %v", err)
	}
	again, err := KeepBundle(ctx, store, testRef, b, manifest, retain)
	if err != nil || again != key {
		t.Fatalf("keeping the same bundle again: %q, %v", again, err)
	}
}

// TestPlantedFinalFilesDoNotStopFinalization: someone with the store's keys
// writes recording.cast, transcript.raw and manifest.json before the
// session ends. The recording is finalized anyway, each file kept under the
// name its hash gives, and read back by the Session as usual.
func TestPlantedFinalFilesDoNotStopFinalization(t *testing.T) {
	r, store, _ := newTestRecorder(t, 1<<20)
	ctx := context.Background()
	for _, name := range []string{CastFile, TranscriptFile, ManifestFile} {
		if _, err := store.Put(ctx, testRef.Prefix()+name, []byte("planted"), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Output(ctx, []byte("genuine output")); err != nil {
		t.Fatal(err)
	}
	done, err := r.Close(ctx)
	if err != nil {
		t.Fatalf("finalizing beside planted files: %v", err)
	}
	ev := EvidenceOf(testRef, done, "", false)
	if done.Key == ManifestFile || !strings.HasSuffix(ev.URIs[2], done.Key) || done.Manifest.Files[CastFile].Stored == "" {
		t.Fatalf("kept as %q, files %+v, URIs %v", done.Key, done.Manifest.Files, ev.URIs)
	}
	m, _, err := ReadManifest(ctx, store, testRef, ev)
	if err != nil {
		t.Fatal(err)
	}
	cast, err := ReadFile(ctx, store, testRef, m, CastFile)
	if err != nil || !strings.Contains(string(cast), "genuine output") {
		t.Fatalf("the cast read back: %v", err)
	}
	dir := store.Root + "/" + testRef.Prefix()
	if _, _, err := VerifyDir(dir); err == nil {
		t.Fatal("the planted manifest.json verified")
	}
	if sum, _, err := VerifyManifest(dir, done.Key); err != nil || sum != ev.ManifestSHA256 {
		t.Fatalf("the kept manifest: %v", err)
	}
}
