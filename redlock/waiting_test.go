package redlock

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/workgroup"
)

// A blocked Lock is woken by the release notification. Its own retries are
// an hour apart, so nothing else could wake it before the test times out.
func TestWaiterWakesOnRelease(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	holder := nodes.client(t, Options{}).NewMutex("k", MutexOptions{})
	require.NoError(t, holder.Lock(context.Background()))

	waiting := make(chan struct{})
	observer := &recordingObserver{onFailed: func(attempt int) {
		if attempt == 2 { // the look after subscribing failed too: now it waits
			close(waiting)
		}
	}}
	waiter := nodes.client(t, Options{Observer: observer, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour})
	m := waiter.NewMutex("k", MutexOptions{})
	var locking workgroup.Group
	locking.Go(func() error { return m.Lock(context.Background()) })

	<-waiting
	require.NoError(t, holder.Unlock(context.Background()))
	require.NoError(t, locking.Wait(), "with retries an hour apart, only the notification can have woken it")
	// Every attempt has a cause: the first look, and per node at most one
	// wake-up for the subscription being made, one for its confirmation and
	// one for the release message. More would be a loop.
	assert.LessOrEqual(t, len(observer.acquires), 1+3*len(nodes.servers), "attempts: only the looks that a subscription or a release caused")
	require.NoError(t, m.Unlock(context.Background()))

	// Nobody waits any more: the subscription is kept, idle, for the next
	// waiter.
	channels := waiter.notifier.Channels()
	if assert.Len(t, channels, 1) {
		assert.True(t, channels[m.releasedChannels()[0]].Idle)
	}
}

// An attempt that meets a release half done (the key already gone from
// one node, still held on the others) is a split vote: it backs off at the
// retry delay, and the release, announced by a quorum meanwhile, ends the
// backoff. The backoff used to be deaf to it: with retries an hour apart,
// the waiter slept through a free lock.
func TestSplitVoteWaiterWakesOnRelease(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	holder := nodes.client(t, Options{}).NewMutex("split", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, holder.Lock(ctx))
	nodes.servers[0].Do(t, "DEL", "split") // the release reached node 0 first

	failures := make(chan error, 16)
	observer := &recordingObserver{}
	observer.onFailed = func(int) {
		observer.mu.Lock()
		failures <- observer.acquires[len(observer.acquires)-1].Err
		observer.mu.Unlock()
	}
	waiter := nodes.client(t, Options{Observer: observer, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}).NewMutex("split", MutexOptions{TTL: 10 * time.Second})
	var locking workgroup.Group
	locking.Go(func() error { return waiter.Lock(ctx) })
	var quorum *QuorumError
	require.ErrorAs(t, <-failures, &quorum)
	require.Equal(t, 1, quorum.Got, "a split vote: node 0 granted, the others refused")

	require.NoError(t, holder.Unlock(ctx)) // reaches nodes 1 and 2, which announce it
	require.NoError(t, locking.Wait(), "with retries an hour apart, only the announced release can have ended the backoff")
	require.NoError(t, waiter.Unlock(ctx))
}

// Waiting on a held lock costs almost no CPU: no busy loop, no polling at
// the retry delay (rueidis #602).
func TestWaitingCostsLittleCPU(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	holder := nodes.client(t, Options{}).NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, holder.Lock(context.Background()))
	waiter := nodes.client(t, Options{}).NewMutex("k", MutexOptions{TTL: 10 * time.Second})

	before := processCPU(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	require.ErrorIs(t, waiter.Lock(ctx), context.DeadlineExceeded)
	used := processCPU(t) - before
	assert.Less(t, used, 50*time.Millisecond, "CPU used while waiting 2 s")
	t.Logf("CPU used while waiting 2 s: %v", used)
}

// processCPU returns the user and system CPU time of this process.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var usage syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &usage))
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
