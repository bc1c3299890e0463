// Package audit writes every step of a session as a structured event, each
// naming the hash of the one before, so that a removed, inserted or edited
// event is detected by anyone holding the log (kubectl breakglass audit
// verify), without trusting the relay that wrote it.
package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Event is one audited step.
type Event struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Kind is what happened: request, approve, deny, grant, attach, end, play, review, refusal, ...
	Kind    string            `json:"kind"`
	Actor   string            `json:"actor"`
	Session string            `json:"session,omitempty"`
	Reason  string            `json:"reason,omitempty"`
	Details map[string]string `json:"details,omitempty"`
	// Prev is the hash of the event before (empty for the first).
	Prev string `json:"prev"`
	// Hash is the SHA-256 of this event's JSON with Hash empty.
	Hash string `json:"hash"`
}

func (e Event) digest() (string, error) {
	e.Hash = ""
	b, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Sink receives each event as one JSON line.
type Sink interface {
	Write(ctx context.Context, line []byte) error
}

// Log chains events and hands them to its sinks. Safe for concurrent use.
type Log struct {
	mu    sync.Mutex
	sinks []Sink
	seq   uint64
	prev  string
	now   func() time.Time
}

// NewLog starts a chain after last (the last event already written, or the
// zero Event for a new log).
func NewLog(last Event, now func() time.Time, sinks ...Sink) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{sinks: sinks, seq: last.Seq, prev: last.Hash, now: now}
}

// Record chains e and writes it to every sink. A sink that fails is an
// error: an unaudited step must not pass silently.
func (l *Log) Record(ctx context.Context, e Event) (Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.Seq = l.seq + 1
	e.Time = l.now().UTC()
	e.Prev = l.prev
	h, err := e.digest()
	if err != nil {
		return Event{}, err
	}
	e.Hash = h
	line, err := json.Marshal(e)
	if err != nil {
		return Event{}, err
	}
	line = append(line, '\n')
	var errs []error
	for _, s := range l.sinks {
		errs = append(errs, s.Write(ctx, line))
	}
	l.seq, l.prev = e.Seq, e.Hash
	return e, errors.Join(errs...)
}

// Verify reads a log and checks every event's hash, that each names the
// hash of the one before, and that no sequence number is missing. It
// returns the number of events, or the first problem with its line.
func Verify(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var prev *Event
	n := 0
	for line := 1; sc.Scan(); line++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var e Event
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return n, fmt.Errorf("line %d: not an audit event: %w", line, err)
		}
		h, err := e.digest()
		if err != nil {
			return n, err
		}
		if h != e.Hash {
			return n, fmt.Errorf("line %d (seq %d): the event does not match its hash: it was edited", line, e.Seq)
		}
		if prev != nil {
			switch {
			case e.Seq != prev.Seq+1:
				return n, fmt.Errorf("line %d: seq %d follows seq %d: %d event(s) missing or reordered", line, e.Seq, prev.Seq, int64(e.Seq)-int64(prev.Seq)-1)
			case e.Prev != prev.Hash:
				return n, fmt.Errorf("line %d (seq %d): names a previous event that is not the one before it", line, e.Seq)
			}
		}
		prev = &e
		n++
	}
	return n, sc.Err()
}

// Last returns the last event of a log, to continue its chain.
func Last(r io.Reader) (Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var last Event
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			return Event{}, fmt.Errorf("the audit log's last line: %w", err)
		}
	}
	return last, sc.Err()
}
