//go:build !race

package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockmux/lockmux/internal/redistest"
)

// TestLockCycleWithObserversDoesNotAllocate pins that several observers
// combined by Observers add no allocation to a Lock+Unlock cycle.
func TestLockCycleWithObserversDoesNotAllocate(t *testing.T) {
	redistest.RequireReal(t) // an in-process server's allocations would count too
	first, second := &countingEvents{}, &countingEvents{}
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{
		NodeTimeout: 5 * time.Second,
		Observer:    Observers(first, second),
	})
	ctx := context.Background()
	m := client.NewMutex("allocs:observers", MutexOptions{})
	cycle := lockUnlockOf(ctx, m)
	cycle()
	waitArmed(t, client)
	assert.Zero(t, testing.AllocsPerRun(100, cycle))
	assert.Equal(t, first.events.Load(), second.events.Load())
}
