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
	// Kind is what happened: one of api/v1alpha1's AuditSteps.
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

// Sink receives events as JSON lines: one or more whole lines per write,
// in the chain's order.
type Sink interface {
	Write(ctx context.Context, lines []byte) error
}

// Log chains events and hands them to its sinks. Safe for concurrent use.
//
// Writes are group-committed: while one batch is being written, events
// recorded meanwhile queue and go out together as the next batch, written
// by the first of their callers, so a slow sink (a collector retrying with
// backoff) costs each caller at most the write in flight and its own, and
// no lock is held across a sink's I/O. Events are chained when their batch
// is taken, so the chain holds only events some sink wrote.
type Log struct {
	sinks []Sink
	now   func() time.Time

	mu      sync.Mutex
	seq     uint64
	prev    string
	queue   []*pending
	writing bool
}

type pending struct {
	e    Event
	err  error
	done chan struct{}
	// lead is closed when this event's caller is to write the next batch.
	lead chan struct{}
}

// NewLog starts a chain after last (the last event already written, or the
// zero Event for a new log).
func NewLog(last Event, now func() time.Time, sinks ...Sink) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{sinks: sinks, seq: last.Seq, prev: last.Hash, now: now}
}

// Head is the chain's last event written: its sequence number and hash.
func (l *Log) Head() (uint64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.prev
}

// Record chains e and writes it to every sink, returning once it is
// written. A sink that fails is an error: an unaudited step must not pass
// silently. ctx's values reach the sinks, its cancellation does not: an
// event queued is written whole or fails whole.
func (l *Log) Record(ctx context.Context, e Event) (Event, error) {
	p := &pending{e: e, done: make(chan struct{}), lead: make(chan struct{})}
	l.mu.Lock()
	l.queue = append(l.queue, p)
	lead := !l.writing
	l.writing = true
	l.mu.Unlock()
	if !lead {
		select {
		case <-p.done:
			return p.e, p.err
		case <-p.lead:
		}
	}
	l.writeBatch(context.WithoutCancel(ctx))
	<-p.done
	return p.e, p.err
}

// writeBatch writes every event queued now (its caller's among them) as
// one batch, then hands the writing on to the first event queued since, or
// stops.
func (l *Log) writeBatch(ctx context.Context) {
	l.mu.Lock()
	batch := l.queue
	l.queue = nil
	seq, prev := l.seq, l.prev
	var lines bytes.Buffer
	for _, p := range batch {
		p.e.Seq, p.e.Time, p.e.Prev = seq+1, l.now().UTC(), prev
		h, err := p.e.digest()
		if err == nil {
			p.e.Hash = h
			var line []byte
			if line, err = json.Marshal(p.e); err == nil {
				lines.Write(line)
				lines.WriteByte('\n')
				seq, prev = p.e.Seq, h
			}
		}
		p.err = err
	}
	l.mu.Unlock()
	var errs []error
	wrote := false
	for _, s := range l.sinks {
		err := s.Write(ctx, lines.Bytes())
		if err != nil {
			SinkFailures.WithLabelValues(sinkKind(s)).Inc()
		}
		errs = append(errs, err)
		wrote = wrote || err == nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if wrote || len(l.sinks) == 0 {
		// Some sink holds the batch: the chain goes on from it (a sink
		// that missed it shows the gap to audit verify).
		l.seq, l.prev = seq, prev
	}
	err := errors.Join(errs...)
	for _, p := range batch {
		if p.err == nil {
			p.err = err
		}
		close(p.done)
	}
	if len(l.queue) > 0 {
		close(l.queue[0].lead)
	} else {
		l.writing = false
	}
}

// Verify reads a log and checks every event's hash, that each names the
// hash of the one before, and that no sequence number is missing. It
// returns the number of events, or the first problem with its line.
func Verify(r io.Reader) (int, error) { return VerifyAgainst(r, nil) }

// Checkpoint is the chain's head at a moment: signed by the relay and
// anchored in the transparency log, kept in the evidence store
// (evidence/checkpoint). A log truncated before a checkpoint, or
// re-chained (events edited and every hash after them recomputed), no
// longer holds the event it names, which `audit verify --checkpoints`
// reports.
type Checkpoint struct {
	Chain string    `json:"chain"`
	Seq   uint64    `json:"seq"`
	Hash  string    `json:"hash"`
	Time  time.Time `json:"time"`
}

// VerifyAgainst is Verify, and then that the log holds each checkpoint's
// event (its sequence number with its hash) and reaches the newest: a log
// truncated before a checkpoint, or re-chained after one, fails. The
// checkpoints' own signatures are checked by whoever gathered them.
func VerifyAgainst(r io.Reader, checkpoints []Checkpoint) (int, error) {
	want := map[uint64]string{}
	var newest uint64
	for _, cp := range checkpoints {
		want[cp.Seq] = cp.Hash
		newest = max(newest, cp.Seq)
	}
	n, last, err := verifyEach(r, func(line int, e Event) error {
		if h, ok := want[e.Seq]; ok && h != e.Hash {
			return fmt.Errorf("line %d (seq %d): not the event the checkpoint anchored (hash %s): the log was re-chained", line, e.Seq, h)
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	if last < newest {
		return n, fmt.Errorf("the log ends at seq %d, but a checkpoint anchors seq %d: it was truncated", last, newest)
	}
	return n, nil
}

// verifyEach checks the chain, handing each event to check; it returns
// the number of events and the last sequence number.
func verifyEach(r io.Reader, check func(line int, e Event) error) (int, uint64, error) {
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
			return n, 0, fmt.Errorf("line %d: not an audit event: %w", line, err)
		}
		// The line must be the event exactly as the relay writes it: JSON
		// matches keys in any case and lets a later duplicate win, so a line
		// rewritten with "ACTOR" after "actor" would hash as one event and
		// read as another in every other tool (a SIEM, jq).
		canonical, err := json.Marshal(e)
		if err != nil {
			return n, 0, err
		}
		if !bytes.Equal(canonical, raw) {
			return n, 0, fmt.Errorf("line %d: not the event as the relay writes it (keys renamed, repeated, reordered or added, or data after it)", line)
		}
		h, err := e.digest()
		if err != nil {
			return n, 0, err
		}
		if h != e.Hash {
			return n, 0, fmt.Errorf("line %d (seq %d): the event does not match its hash: it was edited", line, e.Seq)
		}
		if prev != nil {
			switch {
			case e.Seq != prev.Seq+1:
				return n, 0, fmt.Errorf("line %d: seq %d follows seq %d: %d event(s) missing or reordered", line, e.Seq, prev.Seq, int64(e.Seq)-int64(prev.Seq)-1)
			case e.Prev != prev.Hash:
				return n, 0, fmt.Errorf("line %d (seq %d): names a previous event that is not the one before it", line, e.Seq)
			}
		}
		if err := check(line, e); err != nil {
			return n, 0, err
		}
		prev = &e
		n++
	}
	var last uint64
	if prev != nil {
		last = prev.Seq
	}
	return n, last, sc.Err()
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
