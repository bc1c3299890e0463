package cluster

import plane "github.com/tower-dev/breakglass/localplane/cluster"

// SyncBuffer is a buffer that goroutines write (a terminal's output, a
// server's log) while a test reads it, and waits on (eventually.go).
type SyncBuffer struct{ plane.SyncBuffer }
