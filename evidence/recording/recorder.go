package recording

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"k8s.io/utils/clock"
)

// The objects of one recording, under its prefix.
const (
	CastFile       = "recording.cast"
	TranscriptFile = "transcript.raw"
	ManifestFile   = "manifest.json"
	segmentsDir    = "segments/"
)

// Event kinds, as asciicast v2 names them.
const (
	KindOutput = 'o'
	KindInput  = 'i'
	KindResize = 'r'
)

// Options tune a Recorder.
type Options struct {
	// Width and Height are the terminal's size at the start.
	Width, Height int
	// RetainUntil is when the evidence may first be deleted.
	RetainUntil time.Time
	// SegmentBytes: a segment is written once it holds this much.
	SegmentBytes int
	// HoldBytes and HoldFor ride out a store that refuses segments (down,
	// its disk full): up to HoldBytes of what the terminal carries is kept
	// in memory (default 4 MiB); past that the terminal is held (the
	// writer waits, retrying the segment) for up to HoldFor from the first
	// refusal (default 2m), and only then does recording fail. Nothing
	// recorded is dropped meanwhile: the next segment written holds it.
	HoldBytes int
	HoldFor   time.Duration
	Clock     clock.PassiveClock
}

// Recorder turns a terminal's traffic into evidence. Safe for concurrent use.
type Recorder struct {
	store  Store
	ref    Ref
	prefix string
	opts   Options
	start  time.Time
	// versions are the segments' versions as written, read back at the end.
	versions map[string]string

	mu      sync.Mutex
	last    time.Duration
	cast    bytes.Buffer
	raw     bytes.Buffer
	partial [2][]byte // an incomplete UTF-8 sequence held per direction
	seq     int
	closed  bool
	// refusedSince is when the store began refusing segments (zero while
	// it takes them); lastTry is when a segment was last tried.
	refusedSince, lastTry time.Time
	// pendingRaw is the transcript half of segment seq, whose cast half is
	// written: a flush that failed half-way.
	pendingRaw []byte
}

// New starts the recording of the session ref names. It checks the store
// first: a session that cannot be recorded does not start.
func New(ctx context.Context, store Store, ref Ref, opts Options) (*Recorder, error) {
	if err := prepare(ctx, store, ref, &opts); err != nil {
		return nil, err
	}
	if opts.Width <= 0 || opts.Height <= 0 {
		opts.Width, opts.Height = 80, 24
	}
	r := &Recorder{store: store, ref: ref, prefix: ref.Prefix(), opts: opts, start: opts.Clock.Now(), versions: map[string]string{}}
	if err := r.writeHeader(); err != nil {
		return nil, err
	}
	return r, nil
}

// writeHeader starts the cast with asciicast v2's header.
func (r *Recorder) writeHeader() error {
	header, err := json.Marshal(map[string]any{
		"version": 2, "width": r.opts.Width, "height": r.opts.Height, "timestamp": r.start.Unix(),
		"env": map[string]string{"TERM": "xterm-256color"},
	})
	if err != nil {
		return err
	}
	r.cast.Write(header)
	r.cast.WriteByte('\n')
	return nil
}

// prepare checks that ref can be recorded in store and fills in opts'
// defaults, for New and Resume.
func prepare(ctx context.Context, store Store, ref Ref, opts *Options) error {
	if err := ref.Check(); err != nil {
		return err
	}
	if err := store.Check(ctx); err != nil {
		return err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = 64 << 10
	}
	if opts.HoldBytes <= 0 {
		opts.HoldBytes = 4 << 20
	}
	if opts.HoldFor <= 0 {
		opts.HoldFor = 2 * time.Minute
	}
	return nil
}

// Output records bytes the container wrote.
func (r *Recorder) Output(ctx context.Context, p []byte) error { return r.record(ctx, KindOutput, p) }

// Input records bytes the person typed.
func (r *Recorder) Input(ctx context.Context, p []byte) error { return r.record(ctx, KindInput, p) }

// Mark records a marker: a moment a reviewer is to find, such as a
// moderator starting or stopping to watch.
func (r *Recorder) Mark(ctx context.Context, note string) error {
	return r.record(ctx, KindMarker, []byte(strings.ToValidUTF8(note, "\uFFFD")))
}

// Resize records a new terminal size.
func (r *Recorder) Resize(ctx context.Context, width, height int) error {
	return r.record(ctx, KindResize, []byte(fmt.Sprintf("%dx%d", width, height)))
}

func (r *Recorder) record(ctx context.Context, kind byte, p []byte) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return fmt.Errorf("recording %s is closed", r.prefix)
	}
	// A store refusing segments for longer than HoldFor fails the
	// recording however little is held: a byte that cannot be recorded
	// in time goes nowhere.
	if !r.refusedSince.IsZero() && time.Since(r.refusedSince) >= r.opts.HoldFor {
		since := r.refusedSince
		r.mu.Unlock()
		return fmt.Errorf("the recording store has refused segments since %s", since.UTC().Format(time.RFC3339))
	}
	// Monotonic: a clock that steps back never reorders the record.
	t := max(r.opts.Clock.Since(r.start), r.last)
	r.last = t
	writeRecord(&r.raw, kind, t, p)
	text := p
	if kind == KindOutput || kind == KindInput {
		text = r.decode(kind, p, false)
	}
	if len(text) > 0 {
		writeCastEvent(&r.cast, t, kind, text)
	}
	// While the store refuses, it is tried at most every storeRetry, not at
	// every byte the terminal carries.
	if r.cast.Len() < r.opts.SegmentBytes || (!r.refusedSince.IsZero() && time.Since(r.lastTry) < storeRetry && r.held() < r.opts.HoldBytes) {
		r.mu.Unlock()
		return nil
	}
	err := r.flushLocked(ctx)
	held := r.held()
	r.mu.Unlock()
	if err == nil || held < r.opts.HoldBytes {
		return nil // kept: the next flush writes it
	}
	return r.waitForStore(ctx)
}

// held is how much the recorder keeps in memory, not yet written.
func (r *Recorder) held() int { return r.raw.Len() + r.cast.Len() + len(r.pendingRaw) }

// Held reports whether the recorder keeps anything it could not yet write.
func (r *Recorder) Held() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held() > 0 && !r.refusedSince.IsZero()
}

// storeRetry is how often a held terminal tries the store again.
const storeRetry = 500 * time.Millisecond

// waitForStore holds the writer (the terminal) while the store refuses
// segments and too much is kept already, until a segment is written or
// HoldFor has passed since the first refusal. It waits without the lock:
// the relay's heartbeat and other flushes go on meanwhile.
func (r *Recorder) waitForStore(ctx context.Context) error {
	return r.retryStore(ctx, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.flushLocked(ctx)
	})
}

// retryStore calls write until it succeeds, every storeRetry, for as long
// as HoldFor allows since the store first refused.
func (r *Recorder) retryStore(ctx context.Context, write func() error) error {
	var first time.Time
	for {
		err := write()
		if err == nil {
			return nil
		}
		if first.IsZero() {
			first = time.Now()
		}
		since := first
		r.mu.Lock()
		if !r.refusedSince.IsZero() && r.refusedSince.Before(since) {
			since = r.refusedSince
		}
		r.mu.Unlock()
		if time.Since(since) >= r.opts.HoldFor {
			return fmt.Errorf("the recording store has refused it since %s: %w", since.UTC().Format(time.RFC3339), err)
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(storeRetry):
		}
	}
}

// decode turns p into text for the cast, holding back a UTF-8 sequence cut
// at the end of p until the next chunk completes it. Bytes that are not
// UTF-8 become U+FFFD in the cast; the transcript keeps them exactly.
func (r *Recorder) decode(kind byte, p []byte, final bool) []byte {
	i := 0
	if kind == KindInput {
		i = 1
	}
	b := p
	if len(r.partial[i]) > 0 {
		b = append(append(make([]byte, 0, len(r.partial[i])+len(p)), r.partial[i]...), p...)
		r.partial[i] = nil
	}
	if !final {
		// Hold back at most the last 3 bytes if they start a sequence not yet complete.
		for k := 1; k <= 3 && k <= len(b); k++ {
			tail := b[len(b)-k:]
			if utf8.RuneStart(tail[0]) {
				if !utf8.FullRune(tail) {
					r.partial[i] = append([]byte(nil), tail...)
					b = b[:len(b)-k]
				}
				break
			}
		}
	}
	if utf8.Valid(b) {
		return b
	}
	return bytes.ToValidUTF8(b, []byte("\uFFFD"))
}

// writeCastEvent appends [time, kind, text] and a newline. text is valid
// UTF-8; it is escaped as JSON by hand because this is the relay's hottest
// loop: runs of bytes that need no escape are copied whole.
func writeCastEvent(w *bytes.Buffer, t time.Duration, kind byte, text []byte) {
	var num [32]byte
	w.WriteByte('[')
	w.Write(strconv.AppendFloat(num[:0], t.Seconds(), 'f', 6, 64))
	w.WriteString(`,"`)
	w.WriteByte(kind)
	w.WriteString(`","`)
	start := 0
	for i, c := range text {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		w.Write(text[start:i])
		switch c {
		case '"':
			w.WriteString(`\"`)
		case '\\':
			w.WriteString(`\\`)
		case '\n':
			w.WriteString(`\n`)
		case '\r':
			w.WriteString(`\r`)
		case '\t':
			w.WriteString(`\t`)
		default:
			const hex = "0123456789abcdef"
			w.WriteString(`\u00`)
			w.WriteByte(hex[c>>4])
			w.WriteByte(hex[c&0xf])
		}
		start = i + 1
	}
	w.Write(text[start:])
	w.WriteString("\"]\n")
}

// writeRecord appends one transcript record: the kind, the time since the
// start in nanoseconds and the length (both uvarints), then the bytes.
func writeRecord(w *bytes.Buffer, kind byte, t time.Duration, p []byte) {
	var tmp [binary.MaxVarintLen64]byte
	w.WriteByte(kind)
	w.Write(tmp[:binary.PutUvarint(tmp[:], uint64(t))])
	w.Write(tmp[:binary.PutUvarint(tmp[:], uint64(len(p)))])
	w.Write(p)
}

// Flush writes what was recorded since the last segment as a new segment.
func (r *Recorder) Flush(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flushLocked(ctx)
}

func (r *Recorder) flushLocked(ctx context.Context) error {
	r.lastTry = time.Now()
	err := r.writeSegmentLocked(ctx)
	switch {
	case err == nil:
		r.refusedSince = time.Time{}
	case r.refusedSince.IsZero():
		r.refusedSince = time.Now()
	}
	return err
}

func (r *Recorder) writeSegmentLocked(ctx context.Context) error {
	if r.pendingRaw != nil {
		// The cast of segment seq is written, its transcript was not: that
		// half alone, as it was then (what came since is the next segment).
		name := fmt.Sprintf("%s%s%08d.raw", r.prefix, segmentsDir, r.seq)
		version, err := r.store.Put(ctx, name, r.pendingRaw, r.opts.RetainUntil)
		if err != nil {
			return fmt.Errorf("streaming a recording segment: %w", err)
		}
		r.versions[name], r.pendingRaw = version, nil
		r.seq++
	}
	if r.raw.Len() == 0 && (r.seq > 0 || r.cast.Len() == 0) {
		return nil
	}
	// The cast first, then the transcript, always: a number someone else
	// took (a relay that has not yet noticed another took its session up)
	// is refused at the cast, before any of this segment is written, and
	// this one takes the next; theirs stays out of the recording as foreign.
	for skipped := 0; ; skipped++ {
		name := fmt.Sprintf("%s%s%08d", r.prefix, segmentsDir, r.seq)
		cast, raw := name+".cast", name+".raw"
		_, castWritten := r.versions[cast]
		if !castWritten {
			version, err := r.store.Put(ctx, cast, r.cast.Bytes(), r.opts.RetainUntil)
			if errors.Is(err, ErrExists) && skipped < 100 {
				r.seq++
				continue
			}
			if err != nil {
				return fmt.Errorf("streaming a recording segment: %w", err)
			}
			r.versions[cast] = version
		}
		version, err := r.store.Put(ctx, raw, r.raw.Bytes(), r.opts.RetainUntil)
		if err != nil {
			// The segment's two halves hold the same records: the
			// transcript's is kept as it is now, for the retry, and what is
			// recorded from here goes to the next segment.
			r.pendingRaw = bytes.Clone(r.raw.Bytes())
			r.cast.Reset()
			r.raw.Reset()
			return fmt.Errorf("streaming a recording segment: %w", err)
		}
		r.versions[raw] = version
		break
	}
	r.seq++
	r.cast.Reset()
	r.raw.Reset()
	return nil
}

// FlushWithin writes what is held, trying again while the store refuses,
// for up to d.
func (r *Recorder) FlushWithin(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		err := r.Flush(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(storeRetry):
		}
	}
}

// Abandon stops the recording here without writing anything more: another
// relay took the session up and carries the recording on (Resume), so a
// segment written from here could only collide with its.
func (r *Recorder) Abandon() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.cast.Reset()
	r.raw.Reset()
	r.pendingRaw = nil
}

// Close writes the last segment and finalizes the recording.
func (r *Recorder) Close(ctx context.Context) (Finalized, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Finalized{}, fmt.Errorf("recording %s is already closed", r.prefix)
	}
	// A sequence still cut at the end is what it is: shown as U+FFFD.
	for i, kind := range []byte{KindOutput, KindInput} {
		if len(r.partial[i]) > 0 {
			writeCastEvent(&r.cast, r.last, kind, r.decode(kind, nil, true))
		}
	}
	r.closed = true
	r.mu.Unlock()
	// What is held is written, and the manifest after it, even if the store
	// is away for a while (within HoldFor): a session's end is when losing
	// what it kept would hurt most.
	var done Finalized
	err := r.retryStore(ctx, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if err := r.flushLocked(ctx); err != nil {
			return err
		}
		var err error
		done, err = Finalize(ctx, r.store, Meta{Session: r.ref, Started: r.start, RetainUntil: r.opts.RetainUntil, Segments: r.versions})
		return err
	})
	return done, err
}
