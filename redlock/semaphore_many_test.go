package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// Available counts the slots free on a quorum of nodes: a slot held on
// one node of three can still be won, one held on two cannot. It needs a
// quorum of answers.
func TestSemaphoreAvailable(t *testing.T) {
	redistest.RequireReal(t) // a node is shut down
	nodes := startCluster(t, 3, redistest.Options{})
	ctx := context.Background()
	client := nodes.client(t, Options{NodeTimeout: time.Second})
	semaphore := client.NewSemaphore("available", 4, MutexOptions{TTL: 10 * time.Second})
	available, err := semaphore.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 4, available)

	permit, err := semaphore.TryAcquire(ctx)
	require.NoError(t, err)
	defer permit.Release(ctx)
	available, err = semaphore.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, available, "one permit held")

	other := (permit.Slot() + 1) % 4
	nodes.servers[0].Do(t, "SET", permitKey("available", other), "another", "PX", "60000")
	available, err = semaphore.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, available, "a slot held on one node of three can be won")
	nodes.servers[1].Do(t, "SET", permitKey("available", other), "another", "PX", "60000")
	available, err = semaphore.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, available, "a slot held on two nodes of three cannot")

	nodes.servers[2].Shutdown()
	available, err = semaphore.Available(ctx)
	require.NoError(t, err, "two nodes of three answer")
	assert.Equal(t, 2, available)
	nodes.servers[1].Shutdown()
	_, err = semaphore.Available(ctx)
	require.ErrorIs(t, err, ErrQuorumUnreachable)
	assert.ErrorIs(t, err, ErrNodeUnreachable)
}

// TryAcquireMany returns every permit asked for or none: when the
// semaphore has fewer free, it gives back the ones it won.
func TestSemaphoreTryAcquireManyIsAllOrNothing(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	ctx := context.Background()
	options := MutexOptions{TTL: 10 * time.Second}
	semaphore := nodes.client(t, Options{}).NewSemaphore("many", 4, options)
	permits, err := semaphore.TryAcquireMany(ctx, 3)
	require.NoError(t, err)
	require.Len(t, permits, 3)
	slots := map[int]bool{}
	for _, permit := range permits {
		slots[permit.Slot()] = true
	}
	assert.Len(t, slots, 3, "three different slots")

	other := nodes.client(t, Options{}).NewSemaphore("many", 4, options)
	none, err := other.TryAcquireMany(ctx, 2)
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.Nil(t, none)
	available, err := other.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, available, "the permit won before the failure was given back")

	for _, permit := range permits {
		require.NoError(t, permit.Release(ctx))
	}
	both, err := other.TryAcquireMany(ctx, 2)
	require.NoError(t, err)
	require.Len(t, both, 2)

	for _, n := range []int{0, 5} {
		_, err := other.TryAcquireMany(ctx, n)
		assert.ErrorIs(t, err, ErrInvalidOptions, "n = %d", n)
		_, err = other.AcquireMany(ctx, n)
		assert.ErrorIs(t, err, ErrInvalidOptions, "n = %d", n)
	}
}

// AcquireMany waits until every permit it asks for is free at once.
func TestSemaphoreAcquireManyWaitsForAll(t *testing.T) {
	redistest.RequireReal(t) // notifications need RESP3 pub/sub
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	options := MutexOptions{TTL: 10 * time.Second, RetryDelayMin: time.Millisecond, RetryDelayMax: 5 * time.Millisecond}
	holders := nodes.client(t, Options{}).NewSemaphore("many-wait", 3, options)
	held, err := holders.TryAcquireMany(ctx, 2)
	require.NoError(t, err)
	observer := &failedAttempts{failed: make(chan struct{}, 64)}
	waiter := nodes.client(t, Options{Observer: observer}).NewSemaphore("many-wait", 3, options)
	acquired := make(chan error, 1)
	var permits []Permit
	go func() {
		var err error
		permits, err = waiter.AcquireMany(ctx, 2)
		acquired <- err
	}()
	select {
	case <-observer.failed:
	case <-ctx.Done():
		t.Fatal("the waiter made no attempt")
	}
	require.NoError(t, held[0].Release(ctx))
	require.NoError(t, <-acquired)
	require.Len(t, permits, 2)
	assert.NotEqual(t, permits[0].Slot(), permits[1].Slot())
	for _, permit := range permits {
		assert.NotEqual(t, held[1].Slot(), permit.Slot(), "the slot still held")
	}
}
