package session

import (
	"io"
	"sync"
)

// fanout copies the terminal's output to every reader subscribed to it.
type fanout struct {
	mu     sync.Mutex
	subs   []*io.PipeWriter
	closed bool
}

func newFanout() *fanout { return &fanout{} }

func (f *fanout) subscribe() io.Reader {
	r, w := io.Pipe()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		_ = w.Close()
	} else {
		f.subs = append(f.subs, w)
	}
	return r
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
