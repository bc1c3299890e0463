package session

import (
	"io"
	"sync"
	"time"
)

// fanout copies the terminal's output to every viewer subscribed to it,
// and knows since when nobody has been watching.
type fanout struct {
	mu     sync.Mutex
	subs   []*io.PipeWriter
	closed bool
	// alone is when the last viewer left (or the start, before anyone came).
	alone time.Time
	now   func() time.Time
}

func newFanout(start time.Time) *fanout { return &fanout{alone: start, now: time.Now} }

func (f *fanout) subscribe(now func() time.Time) io.ReadCloser {
	r, w := io.Pipe()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = now
	if f.closed {
		_ = w.Close()
	} else {
		f.subs = append(f.subs, w)
	}
	return &viewer{PipeReader: r, w: w, f: f}
}

// viewer is one subscriber; closing it leaves.
type viewer struct {
	*io.PipeReader
	w *io.PipeWriter
	f *fanout
}

func (v *viewer) Close() error {
	v.f.drop(v.w)
	return v.PipeReader.Close()
}

// watchers says how many viewers there are, and since when there were none.
func (f *fanout) watchers() (int, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs), f.alone
}

func (f *fanout) write(p []byte) {
	f.mu.Lock()
	subs := append([]*io.PipeWriter(nil), f.subs...)
	f.mu.Unlock()
	for _, w := range subs {
		// A reader that went away stops receiving; the recording has every byte already.
		if _, err := w.Write(p); err != nil {
			f.drop(w)
		}
	}
}

func (f *fanout) drop(w *io.PipeWriter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, s := range f.subs {
		if s == w {
			f.subs = append(f.subs[:i], f.subs[i+1:]...)
			if len(f.subs) == 0 {
				f.alone = f.now()
			}
			return
		}
	}
}

func (f *fanout) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for _, w := range f.subs {
		_ = w.Close()
	}
	f.subs = nil
}

// teeReader records what is read through it.
type teeReader struct {
	r      io.Reader
	record func([]byte)
}

func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.record(p[:n])
	}
	return n, err
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
