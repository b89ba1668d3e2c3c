package redlock

import "time"

// Clock tells the time for every elapsed-time and validity computation of
// a Client. Its readings must carry a monotonic clock reading, as those of
// time.Now do, so that a jump of the wall clock cannot move a deadline: only
// differences between readings (Sub, Since-style arithmetic, Add) are used,
// never their wall-clock value. A Clock must be safe for concurrent use.
//
// Options.Clock is nil in production; tests inject a Clock to move time by
// hand.
type Clock interface {
	// Now returns the current time, with a monotonic clock reading.
	Now() time.Time
}

// realClock is the Clock of time.Now.
type realClock struct{}

// Now returns time.Now().
func (realClock) Now() time.Time { return time.Now() }
