package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// A forced release deletes the key on every node whoever holds it: the
// holder learns it at its Unlock, and a waiter, which would retry only
// every hour, is told and takes the lock.
func TestForceReleaseEndsTheHoldAndWakesAWaiter(t *testing.T) {
	redistest.RequireReal(t) // key tracking and notifications
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	holder := nodes.client(t, Options{}).NewMutex("stuck", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, holder.Lock(ctx))
	onEveryNode(t, nodes, "stuck")
	observer := &failedAttempts{failed: make(chan struct{}, 64)}
	waiter := nodes.client(t, Options{Observer: observer, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}).NewMutex("stuck", MutexOptions{TTL: 10 * time.Second})
	locked := make(chan error, 1)
	go func() { locked <- waiter.Lock(ctx) }()
	<-observer.failed

	released, err := nodes.client(t, Options{}).ForceRelease(ctx, "stuck")
	require.NoError(t, err)
	assert.Equal(t, 3, released)
	require.NoError(t, <-locked, "the waiter was told")
	assert.ErrorIs(t, holder.Unlock(ctx), ErrLockLost)
	require.NoError(t, waiter.Unlock(ctx))

	released, err = nodes.client(t, Options{}).ForceRelease(ctx, "stuck")
	require.NoError(t, err)
	assert.Zero(t, released, "nothing to release")
}
