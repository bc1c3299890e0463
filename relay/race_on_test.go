//go:build race

package relay

// raceDetector: this test binary was built with -race.
const raceDetector = true
