package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// Writer is a sink writing lines to an io.Writer, such as stdout.
type Writer struct {
	mu sync.Mutex
	W  io.Writer
}

// Write writes whole lines.
func (w *Writer) Write(_ context.Context, line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.W.Write(line)
	return err
}

// File is a sink appending to a file, synced after every event.
type File struct {
	mu sync.Mutex
	f  *os.File
}

// OpenFile opens (or creates) an audit file and returns the sink and the
// last event in it, to continue the chain.
func OpenFile(path string) (*File, Event, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, Event{}, err
	}
	last, err := Last(f)
	if err != nil {
		_ = f.Close()
		return nil, Event{}, fmt.Errorf("%s: %w", path, err)
	}
	return &File{f: f}, last, nil
}

// Write appends whole lines and syncs them to disk.
func (s *File) Write(_ context.Context, line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.f.Write(line); err != nil {
		return err
	}
	return s.f.Sync()
}

// Close closes the file.
func (s *File) Close() error { return s.f.Close() }

// HTTP is a sink posting events to a collector (NDJSON, one or more lines
// per request), retrying with backoff.
type HTTP struct {
	URL     string
	Client  *http.Client
	Retries int
	Backoff time.Duration
}

// NewHTTP is the collector sink as the relay and the sweeper run it: five
// retries with a doubling backoff from 200ms (about six seconds in all),
// each attempt bounded by ten seconds. A collector down longer than that
// refuses the step being audited: nothing unaudited takes effect.
func NewHTTP(url string) *HTTP {
	return &HTTP{URL: url, Client: &http.Client{Timeout: 10 * time.Second}, Retries: 5, Backoff: 200 * time.Millisecond}
}

// Write posts the lines; a 5xx or 429 answer or a network error is retried.
func (h *HTTP) Write(ctx context.Context, line []byte) error {
	client := h.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	backoff := h.Backoff
	if backoff <= 0 {
		backoff = 200 * time.Millisecond
	}
	var last error
	for attempt := 0; attempt <= h.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return errors.Join(last, ctx.Err())
			case <-time.After(backoff):
			}
			backoff *= 2
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(line))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := client.Do(req)
		if err != nil {
			last = err
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			return nil
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
			last = fmt.Errorf("audit collector answered %s", resp.Status)
		default:
			return fmt.Errorf("audit collector refused the event: %s", resp.Status)
		}
	}
	return fmt.Errorf("audit collector: %d attempts failed: %w", h.Retries+1, last)
}
