package redlock

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

func TestManualClock(t *testing.T) {
	clock := newManualClock()
	start := clock.Now()
	assert.Equal(t, start, clock.Now(), "the clock moves only when advanced")

	clock.Advance(1500 * time.Millisecond)
	assert.Equal(t, 1500*time.Millisecond, clock.Now().Sub(start))

	var group sync.WaitGroup
	for range 8 {
		group.Go(func() {
			for range 100 {
				clock.Advance(time.Millisecond)
				_ = clock.Now()
			}
		})
	}
	group.Wait()
	assert.Equal(t, 2300*time.Millisecond, clock.Now().Sub(start))

	var zero manualClock
	assert.False(t, zero.Now().IsZero(), "the zero manualClock starts at the current time")
}

func TestRealClockIsMonotonic(t *testing.T) {
	reading := realClock{}.Now()
	// A reading with a monotonic component prints it as "m=+…"; Round(0)
	// strips it.
	assert.Contains(t, reading.String(), "m=")
	assert.NotContains(t, reading.Round(0).String(), "m=")
}
