package live

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tower-dev/breakglass/relay/wire"
)

// viewerBuffer is how many output chunks may wait for one viewer. A viewer
// further behind is cut off with ErrTooSlow, never fed a stream with holes
// and never allowed to hold up the session: the recording has every byte.
const viewerBuffer = 1024

// ErrTooSlow ends a viewer that fell too far behind; it may reconnect.
var ErrTooSlow = errors.New("the viewer fell too far behind the terminal; reconnect to continue")

// replayBytes bounds the output a viewer is shown from before it joined:
// about two full screens, the prompt the shell printed before the
// requester's page connected, or the screen a watcher joins mid-session.
const replayBytes = 8 << 10

// fanout copies the terminal's output to every viewer, and is the one
// count of who has the terminal open: the people a session's page shows,
// the watchers a moderated session waits for, and since when nobody has
// been watching, which the disconnect limit counts.
type fanout struct {
	mu     sync.Mutex
	subs   []*viewer
	closed bool
	// changed, when set, is told after who's viewer came or went (not at
	// the end, when all go at once). It may be told late and out of order:
	// it reads the viewers as they are when told.
	changed func(who wire.Attached)
	// alone is when the last viewer left (or the start, before anyone came).
	alone time.Time
	now   func() time.Time
	// recent is the output's last replayBytes (fewer while it is short);
	// cut says its start is not the output's.
	recent []byte
	cut    bool
}

func newFanout(start time.Time) *fanout { return &fanout{alone: start, now: time.Now} }

// nobodySince restarts the count of time without viewers at t, while
// nobody has subscribed yet.
func (f *fanout) nobodySince(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.subs) == 0 {
		f.alone = t
	}
}

// viewer is one subscriber: a bounded queue of chunks drained into a pipe.
type viewer struct {
	*io.PipeReader
	who   wire.Attached
	w     *io.PipeWriter
	queue *chunkQueue
	f     *fanout
	once  sync.Once
}

// chunkQueue holds up to viewerBuffer chunks for one viewer in a slice that
// grows only as a burst needs and is let go once drained: a channel of that
// capacity would cost every idle viewer all of it (docs/scaling.md).
type chunkQueue struct {
	mu     sync.Mutex
	chunks [][]byte
	closed bool
	// ready is signalled when a chunk arrives or the queue closes.
	ready chan struct{}
}

func newChunkQueue() *chunkQueue { return &chunkQueue{ready: make(chan struct{}, 1)} }

// push queues c, or reports false when viewerBuffer chunks already wait.
func (q *chunkQueue) push(c []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.chunks) >= viewerBuffer {
		return false
	}
	q.chunks = append(q.chunks, c)
	q.signal()
	return true
}

// close lets the reader take what is queued, then ends it.
func (q *chunkQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.signal()
}

func (q *chunkQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop waits for the next chunk; false once the queue is closed and empty.
func (q *chunkQueue) pop() ([]byte, bool) {
	for {
		q.mu.Lock()
		if len(q.chunks) > 0 {
			c := q.chunks[0]
			q.chunks[0] = nil
			q.chunks = q.chunks[1:]
			if len(q.chunks) == 0 {
				q.chunks = nil // the burst's array goes with it
			}
			q.mu.Unlock()
			return c, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return nil, false
		}
		<-q.ready
	}
}

// subscribe is who's new viewer of the output from now on, shown the
// recent screen first if replay says so.
func (f *fanout) subscribe(who wire.Attached, now func() time.Time, replay bool) io.ReadCloser {
	r, w := io.Pipe()
	v := &viewer{PipeReader: r, w: w, who: who, queue: newChunkQueue(), f: f}
	f.mu.Lock()
	f.now = now
	if f.closed {
		f.mu.Unlock()
		_ = w.Close()
		return v
	}
	if recent := f.replayLocked(); replay && len(recent) > 0 {
		v.queue.push(recent)
	}
	f.subs = append(f.subs, v)
	changed := f.changed
	f.mu.Unlock()
	if changed != nil {
		// Told off the terminal's path: what is told may wait on the API
		// server, while the new viewer's output must flow from now.
		go changed(who)
	}
	go func() {
		for {
			chunk, ok := v.queue.pop()
			if !ok {
				break
			}
			if _, err := w.Write(chunk); err != nil {
				f.drop(v, err)
			}
		}
		_ = w.Close()
	}()
	return v
}

// end stops feeding v. A viewer cut off (too slow, gone, or its session
// moved) gets its error at once; at the session's end it reads what is
// queued, then EOF. The error goes first: a pump that saw the queue closed
// would otherwise end the pipe with EOF, and a pipe keeps its first error.
func (v *viewer) end(why error) {
	v.once.Do(func() {
		if why != nil {
			_ = v.w.CloseWithError(why)
		}
		v.queue.close()
	})
}

// Close is the viewer leaving.
func (v *viewer) Close() error {
	v.f.drop(v, io.ErrClosedPipe)
	return v.PipeReader.Close()
}

// watchers says how many viewers there are, and since when there were none.
func (f *fanout) watchers() (int, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs), f.alone
}

// people is who has the terminal open, each once: the requester typing
// first, then the watchers by name.
func (f *fanout) people() []wire.Attached {
	f.mu.Lock()
	out := make([]wire.Attached, 0, len(f.subs))
	for _, v := range f.subs {
		out = append(out, v.who)
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b wire.Attached) int {
		if a.Typing != b.Typing {
			if a.Typing {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return slices.Compact(out)
}

// moderators is how many watchers' terminals are open: a moderated
// session's requester types only while there is one.
func (f *fanout) moderators() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, v := range f.subs {
		if !v.who.Typing {
			n++
		}
	}
	return n
}

// onChange tells changed after each viewer that comes or goes.
func (f *fanout) onChange(changed func(who wire.Attached)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changed = changed
}

// replayLocked is what a new viewer is shown first: the recent output,
// from its first line break on if its start was cut (never half a line or
// half an escape sequence at the top).
func (f *fanout) replayLocked() []byte {
	replay := f.recent
	if f.cut {
		i := bytes.IndexByte(replay, '\n')
		if i < 0 {
			return nil
		}
		replay = replay[i+1:]
	}
	return append([]byte(nil), replay...)
}

// keep adds p to the recent output, dropping what falls beyond replayBytes.
func (f *fanout) keep(p []byte) {
	if len(p) >= replayBytes {
		f.recent, f.cut = append(f.recent[:0], p[len(p)-replayBytes:]...), true
		return
	}
	if over := len(f.recent) + len(p) - replayBytes; over > 0 {
		f.recent, f.cut = f.recent[:copy(f.recent, f.recent[over:])], true
	}
	f.recent = append(f.recent, p...)
}

// write hands p to every viewer without waiting for any of them; sends and
// closes of a viewer's queue both happen under the lock.
func (f *fanout) write(p []byte) {
	chunk := append([]byte(nil), p...)
	var cut []wire.Attached
	f.mu.Lock()
	f.keep(p)
	for i := 0; i < len(f.subs); {
		if f.subs[i].queue.push(chunk) {
			i++
		} else {
			cut = append(cut, f.removeLocked(i, ErrTooSlow))
		}
	}
	changed := f.changed
	f.mu.Unlock()
	// Told off the output's path: what is told may wait on the API server.
	for _, who := range cut {
		if changed != nil {
			go changed(who)
		}
	}
}

// drop removes v, if it is still there, ending its stream with why.
func (f *fanout) drop(v *viewer, why error) {
	f.mu.Lock()
	i := slices.Index(f.subs, v)
	if i < 0 {
		f.mu.Unlock()
		return
	}
	f.removeLocked(i, why)
	changed := f.changed
	f.mu.Unlock()
	if changed != nil {
		changed(v.who)
	}
}

// removeLocked ends the ith viewer and says whose it was.
func (f *fanout) removeLocked(i int, why error) wire.Attached {
	v := f.subs[i]
	f.subs = append(f.subs[:i], f.subs[i+1:]...)
	if len(f.subs) == 0 {
		f.alone = f.now()
	}
	v.end(why)
	return v.who
}

func (f *fanout) close() { f.closeWith(nil) }

// closeWith ends every viewer with why (nil: the terminal ended).
func (f *fanout) closeWith(why error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, v := range f.subs {
		v.end(why)
	}
	f.subs = nil
	f.closed = true
}
