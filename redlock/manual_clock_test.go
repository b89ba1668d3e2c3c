package redlock

import (
	"sync"
	"time"
)

var _ clock = (*manualClock)(nil)

// manualClock is a clock that moves only when told to. Its readings carry
// the monotonic reading of the moment it was made, plus the time advanced,
// so they compare and subtract like real readings. It is safe for concurrent
// use.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time     // guarded by mu
	offset time.Duration // guarded by mu: the total advanced so far
}

// newManualClock returns a manualClock that starts at the current time.
func newManualClock() *manualClock {
	return &manualClock{now: time.Now()}
}

// Now returns the clock's current reading.
func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		c.now = time.Now()
	}
	return c.now.Add(c.offset)
}

// Advance moves the clock forward by d (backward when d is negative).
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}
