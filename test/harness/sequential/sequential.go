// Package sequential is for checks that explore a model state by state:
// under -race they run many times slower and find nothing more, so the
// plain pass of make test-unit runs them and the -race pass skips them.
package sequential

import "testing"

// Only skips t in a test binary built with -race.
func Only(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("sequential: make test-unit runs it without -race")
	}
}
