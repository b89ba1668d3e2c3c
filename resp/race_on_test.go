//go:build race

package resp

// raceEnabled reports whether the race detector is on: it adds allocations,
// so allocation checks are skipped under it.
const raceEnabled = true
