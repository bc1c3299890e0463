// Package transcript is what a recording says a person typed and saw, as
// the relay's API, the kubectl plugin and the recording package share it:
// the lines entered (Command) and where a search found its text (Match).
// It holds types only, so that clients of the API link no recording store.
package transcript

import (
	"encoding/json"
	"math"
	"time"
)

// Command is one line entered at the terminal.
type Command struct {
	// Line is the line as the keys made it: what the shell received, unless
	// Uncertain. Always valid UTF-8.
	Line string
	// At is when the line's first key came and EndAt its last (the Enter),
	// since the start of the recording: `recording play --from At` starts
	// the replay there.
	At, EndAt time.Duration
	// InputStart and InputEnd are the bytes [InputStart, InputEnd) of the
	// input stream (InputStream) the line came from, its end included.
	// The ranges of successive commands are ordered and never overlap; the
	// bytes between them are keys that made no line (an Enter alone).
	InputStart, InputEnd int
	// Ended is how the line ended.
	Ended LineEnd
	// Uncertain says Line may not be what the shell received.
	Uncertain bool
	// Why says what was marked, each reason once, "; " between: why the
	// line is Uncertain, and what else a reviewer should know (a paste, a
	// line abandoned).
	Why string
}

// LineEnd is how a line ended.
type LineEnd string

const (
	// EndEnter is Enter; the shell (or the program reading) took the line.
	EndEnter LineEnd = "enter"
	// EndInterrupt is Ctrl-C; the line was abandoned, never run.
	EndInterrupt LineEnd = "interrupt"
	// EndEOF is Ctrl-D on an empty line, the end of input: a shell exits.
	EndEOF LineEnd = "eof"
	// EndUnfinished is a line the recording ended before; never run.
	EndUnfinished LineEnd = "unfinished"
)

// The streams a Match is found in.
const (
	StreamOutput = "output"
	StreamInput  = "input"
)

// Match is one place a search found its text.
type Match struct {
	// At is when the first character matched was shown (output) or when
	// the line it is in was begun (input), since the start of the recording.
	At time.Duration
	// Stream is StreamOutput or StreamInput.
	Stream string
	// Context is the line around the match, as text: control characters
	// are spaces, a long line is cut around the match ("…").
	Context string
}

// Command and Match travel as JSON with times in seconds, as asciicast
// and web players count them.

type commandJSON struct {
	Line       string  `json:"line"`
	At         float64 `json:"at"`
	EndAt      float64 `json:"endAt"`
	InputStart int     `json:"inputStart"`
	InputEnd   int     `json:"inputEnd"`
	Ended      LineEnd `json:"ended"`
	Uncertain  bool    `json:"uncertain,omitempty"`
	Why        string  `json:"why,omitempty"`
}

// MarshalJSON writes the times in seconds.
func (c Command) MarshalJSON() ([]byte, error) {
	return json.Marshal(commandJSON{c.Line, c.At.Seconds(), c.EndAt.Seconds(), c.InputStart, c.InputEnd, c.Ended, c.Uncertain, c.Why})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Command) UnmarshalJSON(b []byte) error {
	var w commandJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = Command{w.Line, fromSeconds(w.At), fromSeconds(w.EndAt), w.InputStart, w.InputEnd, w.Ended, w.Uncertain, w.Why}
	return nil
}

func fromSeconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

type matchJSON struct {
	At      float64 `json:"at"`
	Stream  string  `json:"stream"`
	Context string  `json:"context"`
}

// MarshalJSON writes the time in seconds.
func (m Match) MarshalJSON() ([]byte, error) {
	return json.Marshal(matchJSON{m.At.Seconds(), m.Stream, m.Context})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (m *Match) UnmarshalJSON(b []byte) error {
	var w matchJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = Match{fromSeconds(w.At), w.Stream, w.Context}
	return nil
}
