// Package measure is the benchmarks' arithmetic: quantiles of durations,
// in the units docs/benchmarks.md reports them in, and the memory in use.
package measure

import (
	"runtime"
	"slices"
	"time"
)

// Quantile is the q-quantile (0 to 1) of d, the lower of two nearest
// ranks; d is left as it was.
func Quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// HeapInUse is the memory in use after a collection: heap and stacks
// (goroutines are much of an idle session's cost).
func HeapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
