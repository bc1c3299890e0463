package recording

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Play writes a recording's output events to w at their recorded times,
// divided by speed (2 is twice as fast); input and resize events are not
// shown, as a terminal would not echo them twice. A malformed cast is
// refused at the line it breaks.
func Play(ctx context.Context, cast io.Reader, w io.Writer, speed float64) error {
	return PlayFrom(ctx, cast, w, speed, 0)
}

// PlayFrom is Play starting at from: the output before it is written at
// once, without waiting, so that the screen shows what it showed then
// (a command found by Commands or Search, at its At).
func PlayFrom(ctx context.Context, cast io.Reader, w io.Writer, speed float64, from time.Duration) error {
	if speed <= 0 {
		return fmt.Errorf("speed %v: must be positive", speed)
	}
	sc := bufio.NewScanner(cast)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	if !sc.Scan() {
		return fmt.Errorf("an empty recording")
	}
	var header struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(sc.Bytes(), &header); err != nil || header.Version != 2 {
		return fmt.Errorf("line 1: not an asciicast v2 header")
	}
	start := time.Now()
	for line := 2; sc.Scan(); line++ {
		var ev []json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || len(ev) != 3 {
			return fmt.Errorf("line %d: not an asciicast event", line)
		}
		var at float64
		var kind, data string
		if json.Unmarshal(ev[0], &at) != nil || json.Unmarshal(ev[1], &kind) != nil || json.Unmarshal(ev[2], &data) != nil {
			return fmt.Errorf("line %d: not an asciicast event", line)
		}
		if kind != "o" {
			continue
		}
		due := start.Add(time.Duration((at - from.Seconds()) / speed * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		if _, err := io.WriteString(w, data); err != nil {
			return err
		}
	}
	return sc.Err()
}
