package conn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The wait between two follows of the sentinels doubles while they fail
// at once, within its bounds, and starts again from the lower bound after
// a subscription that lived at least the upper bound: its end is news, and
// a Conn that followed a sentinel for a day used to wait the whole upper
// bound before it followed the next one.
func TestNextBackoff(t *testing.T) {
	low, high := 100*time.Millisecond, 5*time.Second
	wait := time.Duration(0)
	for _, want := range []time.Duration{low, 2 * low, 4 * low} {
		wait = NextBackoff(wait, time.Millisecond, low, high)
		assert.Equal(t, want, wait)
	}
	assert.Equal(t, high, NextBackoff(4*time.Second, time.Millisecond, low, high), "capped")
	assert.Equal(t, low, NextBackoff(high, 24*time.Hour, low, high), "a long-lived subscription ended")
}
