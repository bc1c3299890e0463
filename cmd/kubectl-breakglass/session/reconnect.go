package session

import (
	"io"
	"sync"

	"github.com/tower-dev/breakglass/relay/client"
)

// input hands what the person types to one terminal connection after
// another: a reconnect must not lose keystrokes to the connection that
// dropped, whose reader would otherwise still be waiting on stdin.
type input struct {
	chunks chan []byte
}

// newInput reads in until it ends, for the connections to come.
func newInput(in io.Reader) *input {
	i := &input{chunks: make(chan []byte)}
	go func() {
		defer close(i.chunks)
		for {
			buf := make([]byte, 4096)
			n, err := in.Read(buf)
			if n > 0 {
				i.chunks <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	return i
}

// reader is one connection's view of the input; it ends (io.EOF) when
// stop is closed, leaving what comes after to the next connection.
func (i *input) reader(stop <-chan struct{}) io.Reader { return &inputReader{i: i, stop: stop} }

type inputReader struct {
	i    *input
	stop <-chan struct{}
	rest []byte
}

func (r *inputReader) Read(p []byte) (int, error) {
	if len(r.rest) == 0 {
		select {
		case <-r.stop:
			return 0, io.EOF
		case b, ok := <-r.i.chunks:
			if !ok {
				return 0, io.EOF
			}
			r.rest = b
		}
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// sizes forwards terminal sizes to one connection after another, sending
// the latest again to each new one (a new shell starts at the default).
type sizes struct {
	in     <-chan client.Size
	mu     sync.Mutex
	latest client.Size
}

// next is the channel for one connection, until stop is closed.
func (s *sizes) next(stop <-chan struct{}) <-chan client.Size {
	out := make(chan client.Size, 1)
	s.mu.Lock()
	out <- s.latest
	s.mu.Unlock()
	go func() {
		for {
			select {
			case <-stop:
				return
			case sz, ok := <-s.in:
				if !ok {
					return
				}
				s.mu.Lock()
				s.latest = sz
				s.mu.Unlock()
				select {
				case <-out:
				default:
				}
				out <- sz
			}
		}
	}()
	return out
}
