//go:build !race

package redlock

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/workgroup"
)

// lockUnlockOf returns a Lock+Unlock cycle of m, which panics on an error:
// AllocsPerRun takes a function without a testing.T.
func lockUnlockOf(ctx context.Context, m *Mutex) func() {
	return func() {
		if err := m.Lock(ctx); err != nil {
			panic(err)
		}
		if err := m.Unlock(ctx); err != nil {
			panic(err)
		}
	}
}

// TestQuarantinedLockCycleDoesNotAllocate pins the zero-allocation claim
// of a Lock+Unlock cycle with the quarantine on, whose votes are each
// followed by a reading of the node's marker.
func TestQuarantinedLockCycleDoesNotAllocate(t *testing.T) {
	redistest.RequireReal(t)
	for _, n := range []int{1, 3, 5} {
		t.Run("N="+strconv.Itoa(n), func(t *testing.T) {
			client := startCluster(t, n, redistest.Options{}).client(t, Options{NodeTimeout: 5 * time.Second})
			ctx := context.Background()
			require.NoError(t, client.TrustNodes(ctx))
			m := client.NewMutex("allocs", MutexOptions{})
			cycle := lockUnlockOf(ctx, m)
			cycle()
			waitArmed(t, client)
			assert.Zero(t, testing.AllocsPerRun(100, cycle))
		})
	}
}

// waitArmed waits until the quarantine watches every node's marker: the
// watcher's arming, on goroutines of its own, allocates.
func waitArmed(t *testing.T, client *Client) {
	t.Helper()
	if client.quarantine == nil {
		return
	}
	for node := range client.addresses {
		require.True(t, waitUntil(func() bool { return client.quarantine.Armed(node) > 0 }), "node %d armed", node)
	}
}

// TestLockCycleDoesNotAllocate pins the zero-allocation claim of a
// Lock+Unlock cycle of a reused Mutex, alone and among concurrent callers.
func TestLockCycleDoesNotAllocate(t *testing.T) {
	redistest.RequireReal(t) // an in-process server's allocations would count too
	for _, n := range []int{1, 3, 5} {
		t.Run("N="+strconv.Itoa(n), func(t *testing.T) {
			// A generous node timeout: 32 callers on a small, busy machine
			// must not fail a round.
			client := startCluster(t, n, redistest.Options{}).client(t, Options{NodeTimeout: 5 * time.Second})
			ctx := context.Background()
			m := client.NewMutex("allocs", MutexOptions{})
			cycle := lockUnlockOf(ctx, m)
			cycle()
			waitArmed(t, client)
			assert.Zero(t, testing.AllocsPerRun(100, cycle), "serial")

			stop := make(chan struct{})
			var callers workgroup.Group
			var warm sync.WaitGroup
			for g := range 31 {
				warm.Add(1)
				callers.Go(func() error {
					m := client.NewMutex("allocs:"+strconv.Itoa(g), MutexOptions{})
					lockUnlock := func() error {
						if err := m.Lock(ctx); err != nil {
							return err
						}
						return m.Unlock(ctx)
					}
					// Warm up: the connections' queues grow to the depth
					// that 32 callers reach, once.
					var err error
					for range 50 {
						if err = lockUnlock(); err != nil {
							break
						}
					}
					warm.Done()
					for err == nil {
						select {
						case <-stop:
							return nil
						default:
						}
						err = lockUnlock()
					}
					return err
				})
			}
			warm.Wait()
			allocations := testing.AllocsPerRun(100, cycle)
			close(stop)
			require.NoError(t, callers.Wait())
			assert.Zero(t, allocations, "among 31 other callers")
		})
	}
}

// A cycle under a context that can be cancelled, reused from cycle to
// cycle as a service's long-lived context is, allocates nothing either:
// each connection registers the context's end once, not once per read.
func TestLockCycleUnderACancellableContextDoesNotAllocate(t *testing.T) {
	redistest.RequireReal(t)
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{NodeTimeout: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := client.NewMutex("allocs", MutexOptions{})
	cycle := lockUnlockOf(ctx, m)
	cycle()
	waitArmed(t, client)
	assert.Zero(t, testing.AllocsPerRun(100, cycle))
}

// TestFailedTryLockAllocatesOnlyItsError pins the cost of a failed
// TryLock: one allocation, the *QuorumError it returns (see the note on
// QuorumError in errors.go).
func TestFailedTryLockAllocatesOnlyItsError(t *testing.T) {
	redistest.RequireReal(t) // an in-process server's allocations would count too
	for _, n := range []int{1, 3, 5} {
		t.Run("N="+strconv.Itoa(n), func(t *testing.T) {
			nodes := startCluster(t, n, redistest.Options{})
			holder := nodes.client(t, Options{}).NewMutex("held", MutexOptions{})
			require.NoError(t, holder.Lock(context.Background()))
			client := nodes.client(t, Options{})
			m := client.NewMutex("held", MutexOptions{})
			attempt := func() {
				if m.TryLock(context.Background()) == nil {
					panic("acquired a held lock")
				}
			}
			attempt()
			waitArmed(t, client)
			assert.Equal(t, 1.0, testing.AllocsPerRun(100, attempt))
		})
	}
}

// TestSemaphoreCycleDoesNotAllocate pins the zero-allocation claim of an
// uncontended Acquire+Release of a Semaphore's permit.
func TestSemaphoreCycleDoesNotAllocate(t *testing.T) {
	redistest.RequireReal(t) // an in-process server's allocations would count too
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{NodeTimeout: 5 * time.Second})
	ctx := context.Background()
	semaphore := client.NewSemaphore("allocs:semaphore", 3, MutexOptions{})
	cycle := func() {
		permit, err := semaphore.Acquire(ctx)
		if err != nil {
			panic(err)
		}
		if err := permit.Release(ctx); err != nil {
			panic(err)
		}
	}
	for range semaphore.Limit() {
		cycle() // each slot's Mutex makes its round once
	}
	waitArmed(t, client)
	assert.Zero(t, testing.AllocsPerRun(100, cycle))

	// Crowded: two of three slots held by another client, each Acquire
	// wins the free one in one round over all three.
	crowded := client.NewSemaphore("allocs:crowded", 3, MutexOptions{TTL: 10 * time.Second})
	holders := client.NewSemaphore("allocs:crowded", 3, MutexOptions{TTL: 10 * time.Second})
	for range 2 {
		permit, err := holders.TryAcquire(ctx)
		require.NoError(t, err)
		defer permit.Release(ctx)
	}
	semaphore = crowded
	for range semaphore.Limit() {
		cycle()
	}
	require.True(t, crowded.crowded.Load())
	assert.Zero(t, testing.AllocsPerRun(100, cycle))
}

// TestRWMutexCyclesDoNotAllocate pins the zero-allocation claim of a
// read/write lock's uncontended cycles: RLock+RUnlock and Lock+Unlock.
func TestRWMutexCyclesDoNotAllocate(t *testing.T) {
	redistest.RequireReal(t) // an in-process server's allocations would count too
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{NodeTimeout: 5 * time.Second})
	ctx := context.Background()
	rw := client.NewRWMutex("allocs:rw", MutexOptions{})
	read := func() {
		if err := rw.RLock(ctx); err != nil {
			panic(err)
		}
		if err := rw.RUnlock(ctx); err != nil {
			panic(err)
		}
	}
	write := func() {
		if err := rw.Lock(ctx); err != nil {
			panic(err)
		}
		if err := rw.Unlock(ctx); err != nil {
			panic(err)
		}
	}
	read()
	write()
	waitArmed(t, client)
	assert.Zero(t, testing.AllocsPerRun(100, read), "RLock+RUnlock")
	assert.Zero(t, testing.AllocsPerRun(100, write), "Lock+Unlock")
}

// TestFairLockCycleDoesNotAllocate pins the zero-allocation claim of an
// uncontended Lock+Unlock of a fair lock.
func TestFairLockCycleDoesNotAllocate(t *testing.T) {
	redistest.RequireReal(t) // an in-process server's allocations would count too
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{NodeTimeout: 5 * time.Second})
	ctx := context.Background()
	m := client.NewMutex("allocs:fair", MutexOptions{Fair: true})
	cycle := lockUnlockOf(ctx, m)
	cycle()
	waitArmed(t, client)
	assert.Zero(t, testing.AllocsPerRun(100, cycle))
}
