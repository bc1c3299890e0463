package debugsession

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/evidence/recording"
)

// Stream is a debug container's terminal, attached through the API server:
// what the person types and what the terminal shows are recorded before
// they go anywhere, and a byte that cannot be recorded goes nowhere (the
// stream ends). The runner opens it; the session's owner (relay/live)
// decides when it closes.
type Stream struct {
	// Recording is the session's recording, which the stream writes into.
	Recording *recording.Recorder
	stdin     *io.PipeWriter
	sizes     *sizeQueue
	// ctx lives as long as the stream; cancel cuts it.
	ctx    context.Context
	cancel context.CancelFunc
	// ended is closed when the stream ends, whoever or whatever ended it,
	// with err (written before the close) saying how.
	ended chan struct{}
	err   error
	// recordingFailed is set when the stream ended because what it
	// carried could not be recorded.
	recordingFailed atomic.Bool
}

// Screen is where a stream's output goes once recorded (Show, never
// holding the stream up), and who is told when the stream has ended
// (Over).
type Screen struct {
	Show func(p []byte)
	Over func()
}

// attach opens the debug container's terminal through the API server,
// WebSocket first with SPDY as the fallback, and tees both directions into
// rec.
func (r *Runner) attach(s *v1alpha1.Session, pod, container string, rec *recording.Recorder, screen Screen) (*Stream, error) {
	req := r.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(s.Namespace).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec)
	ws := newWSAttach(r.Config, req.URL().String())
	spdy, err := remotecommand.NewSPDYExecutor(r.Config, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	// SPDY only when the WebSocket upgrade itself fails, as kubectl decides.
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, err
	}
	st, stdin, stdout := NewStream(rec, screen.Show)
	go func() {
		err := exec.StreamWithContext(st.ctx, remotecommand.StreamOptions{
			Stdin: stdin, Stdout: stdout, Tty: true, TerminalSizeQueue: st.sizes})
		st.err = err
		close(st.ended)
		if screen.Over != nil {
			screen.Over()
		}
	}()
	return st, nil
}

// NewStream wires a terminal's two directions through rec: stdin is what
// the stream reads the person's keys from, stdout what it writes the
// terminal's output to (shown by show once recorded). attach runs it on
// the debug container; a benchmark runs it on nothing.
func NewStream(rec *recording.Recorder, show func([]byte)) (st *Stream, stdin io.Reader, stdout io.Writer) {
	inR, inW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	st = &Stream{Recording: rec, stdin: inW, sizes: newSizeQueue(), ctx: ctx, cancel: cancel, ended: make(chan struct{})}
	stdin = &teeReader{r: inR, record: func(p []byte) error { return rec.Input(ctx, p) }}
	stdout = writerFunc(func(p []byte) (int, error) {
		if err := rec.Output(ctx, p); err != nil {
			st.recordingFailed.Store(true)
			return 0, err
		}
		show(p)
		return len(p), nil
	})
	return st, stdin, stdout
}

// Write sends the person's keystrokes to the shell.
func (st *Stream) Write(p []byte) (int, error) { return st.stdin.Write(p) }

// Resize sets the terminal's size and records it.
func (st *Stream) Resize(ctx context.Context, cols, rows uint16) error {
	if cols == 0 || rows == 0 {
		return fmt.Errorf("a terminal is at least 1x1, not %dx%d", cols, rows)
	}
	if err := st.Recording.Resize(ctx, int(cols), int(rows)); err != nil {
		return err
	}
	st.sizes.push(remotecommand.TerminalSize{Width: cols, Height: rows})
	return nil
}

// CloseInput closes the shell's input (stdin EOF is the detach) and the
// size queue: the stream then ends once the shell has written its last.
func (st *Stream) CloseInput() {
	_ = st.stdin.Close()
	st.sizes.close()
}

// Cut ends the stream now, whatever it still carries.
func (st *Stream) Cut() { st.cancel() }

// Ended is closed when the stream has ended.
func (st *Stream) Ended() <-chan struct{} { return st.ended }

// Err is how the stream ended (nil: the shell exited, or the connection
// under it closed cleanly); read it once Ended is closed.
func (st *Stream) Err() error { return st.err }

// RecordingFailed says the stream ended because what it carried could not
// be recorded: then the session ends rather than going on elsewhere.
func (st *Stream) RecordingFailed() bool { return st.recordingFailed.Load() }

// teeReader records what is read through it; what cannot be recorded is
// not passed on.
type teeReader struct {
	r      io.Reader
	record func([]byte) error
}

func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		if rerr := t.record(p[:n]); rerr != nil {
			return 0, rerr
		}
	}
	return n, err
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// sizeQueue hands terminal sizes to the attach stream. Only the latest size
// matters to the terminal (each one is in the recording already), so a new
// size replaces one not yet taken.
type sizeQueue struct {
	ch   chan remotecommand.TerminalSize
	once sync.Once
	done chan struct{}
}

func newSizeQueue() *sizeQueue {
	return &sizeQueue{ch: make(chan remotecommand.TerminalSize, 1), done: make(chan struct{})}
}

func (q *sizeQueue) push(size remotecommand.TerminalSize) {
	for {
		select {
		case q.ch <- size:
			return
		case <-q.done:
			return
		default:
			select {
			case <-q.ch:
			default:
			}
		}
	}
}

// Next blocks until a new size or the end of the session (nil).
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case size := <-q.ch:
		return &size
	case <-q.done:
		return nil
	}
}

func (q *sizeQueue) close() { q.once.Do(func() { close(q.done) }) }
