//go:build race

package sequential

// raceDetector: this test binary was built with -race.
const raceDetector = true
