//go:build !race

package redlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewTokenDoesNotAllocate(t *testing.T) {
	token := new([tokenLength]byte)
	allocations := testing.AllocsPerRun(1000, func() {
		if err := newToken(token); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocations)

	allocations = testing.AllocsPerRun(1000, func() {
		var local [tokenLength]byte
		if err := newToken(&local); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocations, "a token on the stack")
}

func TestStatsRecorderDoesNotAllocate(t *testing.T) {
	var recorder statsRecorder
	allocations := testing.AllocsPerRun(1000, func() {
		recorder.recordAcquire(200*time.Microsecond, true)
		recorder.recordAcquire(time.Millisecond, false)
		recorder.recordRelease(150*time.Microsecond, true)
		recorder.recordRelease(time.Second, false)
		recorder.recordExtend(300*time.Microsecond, true)
		recorder.recordExtend(time.Minute, false)
		recorder.recordLost()
		recorder.recordNodeError(OutcomeTimeout)
		recorder.recordNodeError(OutcomeError)
	})
	assert.Zero(t, allocations)
	stats := recorder.snapshot()
	require.Positive(t, stats.LockAttempts)
	assert.Equal(t, stats.LockAttempts, stats.Acquire.Count)
}
