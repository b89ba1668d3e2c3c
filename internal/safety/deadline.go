package safety

import "time"

// Deadline translates until, a time.Time with a monotonic reading such as
// redlock.Mutex.Until returns, into CLOCK_MONOTONIC nanoseconds, the clock
// of a history (RELIABILITY.md §8.1): the holder's own claim, converted to
// the shared clock. It reads Now on both sides of time.Until and uses the
// midpoint, so the translation is off by at most half the time between the
// two readings (well under a microsecond). The zero time gives 0.
func Deadline(until time.Time) int64 {
	if until.IsZero() {
		return 0
	}
	before := Now()
	remaining := time.Until(until)
	after := Now()
	return before + (after-before)/2 + int64(remaining)
}
