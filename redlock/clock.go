package redlock

import "time"

// clock tells the time for every elapsed-time and validity computation of
// a Client. Its readings must carry a monotonic clock reading, as those of
// time.Now do, so that a jump of the wall clock cannot move a deadline: only
// differences between readings (Sub, Since-style arithmetic, Add) are used,
// never their wall-clock value. A clock must be safe for concurrent use.
//
// Options.clock is nil in production, meaning realClock; tests inject a
// clock to move time by hand.
type clock interface {
	// Now returns the current time, with a monotonic clock reading.
	Now() time.Time
}

// realClock is the clock of time.Now.
type realClock struct{}

// Now returns time.Now().
func (realClock) Now() time.Time { return time.Now() }

// timerDelay converts a moment of the Client's clock into the delay of a
// timer that should fire then: the time left until it by the Client's
// clock now. It is the one place where Options.clock meets real time: a
// timer waits in real time, so whatever it wakes reads the Client's clock
// again and decides by it. A moment that has not come yet by that reading
// (an injected clock that moved slower than the real one, or an extension
// that moved the moment) gets a new timer; one that has come is due. The
// end of every hold and the renewer's schedule are set this way.
func (c *Client) timerDelay(moment time.Time) time.Duration {
	return moment.Sub(c.options.clock.Now())
}
