//go:build !race

package redlock

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockmux/lockmux/internal/redistest"
)

// TestLentRoundsDoNotAllocate pins the zero-allocation claim of Mutexes
// that share the Client's lent rounds: holds taken side by side, each
// released while the others are held, the fenced one's commit round
// included, borrow and give back rounds without allocating.
func TestLentRoundsDoNotAllocate(t *testing.T) {
	redistest.RequireReal(t) // an in-process server's allocations would count too
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{NodeTimeout: 5 * time.Second})
	ctx := context.Background()
	mutexes := make([]*Mutex, 4)
	for i := range mutexes {
		mutexes[i] = client.NewMutex("lent:"+strconv.Itoa(i), MutexOptions{Fencing: i == 0})
	}
	interleaved := func() {
		for _, m := range mutexes {
			if err := m.Lock(ctx); err != nil {
				panic(err)
			}
		}
		for _, m := range mutexes {
			if err := m.Unlock(ctx); err != nil {
				panic(err)
			}
		}
	}
	interleaved()
	waitArmed(t, client)
	assert.Zero(t, testing.AllocsPerRun(100, interleaved))
}

// The spare rounds outlive a garbage collection: a Lock after one
// borrows the rounds the last Unlock gave back instead of making new
// ones, as it would from a sync.Pool, which a collection empties.
func TestLentRoundsOutliveAGarbageCollection(t *testing.T) {
	redistest.RequireReal(t)
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{NodeTimeout: 5 * time.Second})
	ctx := context.Background()
	cycle := lockUnlockOf(ctx, client.NewMutex("lent:collected", MutexOptions{}))
	cycle()
	waitArmed(t, client)
	assert.Zero(t, testing.AllocsPerRun(20, func() {
		runtime.GC()
		runtime.GC() // a sync.Pool keeps its items for one collection
		cycle()
	}))
}
