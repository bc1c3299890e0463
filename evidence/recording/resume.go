package recording

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// KindMarker marks a moment in the recording (asciicast v2's "m" event;
// the transcript keeps it as a record of its own): where a relay took a
// session up again, and what may be missing before it.
const KindMarker = 'm'

// Resume continues the recording of the session ref names, which started
// at started, after the relay that recorded it stopped without finishing
// it: its segments stay as they are, the new ones are numbered on from the
// last one in the store, and the first thing recorded is a marker saying
// that what the old relay had not yet written out is missing, never a
// silent hole. The segments found are taken at their current versions, as
// the sweeper takes them when it finalizes for a relay that died.
func Resume(ctx context.Context, store Store, ref Ref, opts Options, started time.Time, why string) (*Recorder, error) {
	if err := prepare(ctx, store, ref, &opts); err != nil {
		return nil, err
	}
	prefix := ref.Prefix()
	listed, err := store.List(ctx, prefix+segmentsDir)
	if err != nil {
		return nil, fmt.Errorf("reading the recording's segments: %w", err)
	}
	r := &Recorder{store: store, ref: ref, prefix: prefix, opts: opts, start: started, versions: map[string]string{}}
	next := 0
	for _, key := range listed {
		m := segmentName.FindStringSubmatch(strings.TrimPrefix(key, prefix+segmentsDir))
		if m == nil {
			continue // not ours: Finalize names it as foreign
		}
		version, err := store.Current(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("segment %s: %w", key, err)
		}
		r.versions[key] = version
		i, _ := strconv.Atoi(m[1])
		next = max(next, i+1)
	}
	r.seq = next
	if next == 0 {
		// The old relay wrote nothing out: the recording starts here.
		if opts.Width <= 0 || opts.Height <= 0 {
			r.opts.Width, r.opts.Height = 80, 24
		}
		if err := r.writeHeader(); err != nil {
			return nil, err
		}
	}
	r.last = max(opts.Clock.Since(started), 0)
	note := []byte(strings.ToValidUTF8(why, "\uFFFD"))
	writeRecord(&r.raw, KindMarker, r.last, note)
	writeCastEvent(&r.cast, r.last, KindMarker, note)
	if err := r.flushLocked(ctx); err != nil {
		return nil, err
	}
	return r, nil
}
