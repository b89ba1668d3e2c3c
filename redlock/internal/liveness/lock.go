package liveness

import "time"

// Lock is a lock whose holds the room keeps alive: the lock package's
// Mutex, which implements it on a type of its own.
type Lock interface {
	comparable
	// Hold returns the lock's hold.
	Hold() *Hold
	// LossMargin returns how long before the end of its validity a hold's
	// end is signalled.
	LossMargin() time.Duration
	// EndCame signals the end of the hold of the given generation. It
	// runs on a goroutine of its own.
	EndCame(generation uint64)
}

// Clock reads the time by which holds end.
type Clock interface {
	// Now returns the current time, with a monotonic clock reading.
	Now() time.Time
}

// EndLocked returns the moment, by the lock's clock, when the end of the
// current hold of l is signalled. The caller holds the hold's Mu.
func EndLocked[L Lock](l L) time.Time {
	return l.Hold().Until.Add(-l.LossMargin())
}
