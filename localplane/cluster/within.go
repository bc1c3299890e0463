package cluster

import (
	"fmt"
	"time"
)

// pollEvery is how often the waits below ask again: often enough that a
// test waits little past the moment, rarely enough to leave the API server
// alone.
const pollEvery = 20 * time.Millisecond

// Within asks cond until it holds, for at most the given time. The error
// says how long it waited and what cond last said: a wait that fails
// explains itself.
func Within(within time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(within)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("not within %s: %w", within, err)
			}
			return fmt.Errorf("not within %s", within)
		}
		time.Sleep(pollEvery)
	}
}
