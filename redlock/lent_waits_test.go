package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// retryHourly makes a Lock that waits try again only when a release wakes
// it, within a test.
var retryHourly = Options{RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}

// assertNoLentWait asserts that m keeps no wait state nor, uncontended
// within the process, a turn channel, that its Client's
// notifier has no waiter, and that the Client keeps spare the wait states
// it lent.
func assertNoLentWait(t *testing.T, m *Mutex, spares int, what string) {
	t.Helper()
	assert.Nil(t, m.wait.Load(), "%s: the Mutex keeps a wait state", what)
	assert.False(t, m.turn.Contended(), "%s: an uncontended turn made its channel", what)
	assert.Zero(t, m.client.notifier.Waiting(), "%s: a waiter is still registered", what)
	kept := m.client.waits.Kept()
	assert.Len(t, kept, spares, "%s: the spare wait states", what)
	for _, w := range kept {
		assert.False(t, w.InLine(), "%s: a spare wait state is in line", what)
	}
}

// A Lock that waited for a release and won gives its wait state back: a
// held Mutex keeps none, whatever the kind of lock, and a fair Mutex's
// extras no longer name its place in line.
func TestLockThatWaitedKeepsNoLentWaitState(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holders, waiters := nodes.client(t, Options{}), nodes.client(t, retryHourly)
	options := MutexOptions{TTL: 10 * time.Second}
	fair := MutexOptions{TTL: 10 * time.Second, Fair: true}
	writer, writerHolder := waiters.NewRWMutex("lent:rw", options), holders.NewRWMutex("lent:rw", options)
	semaphore, semaphoreHolder := waiters.NewSemaphore("lent:semaphore", 1, options), holders.NewSemaphore("lent:semaphore", 1, options)
	var permit, held Permit
	for _, c := range []struct {
		name          string
		waiter        *Mutex // the Mutex whose Lock waits
		key           string // a key the holder's hold sets on every node
		hold, release func(context.Context) error
		lock, unlock  func(context.Context) error
		fair          bool
	}{
		{name: "Mutex", waiter: waiters.NewMutex("lent:plain", options), key: "lent:plain"},
		{name: "fair Mutex", waiter: waiters.NewMutex("lent:fair", fair), key: "lent:fair", fair: true},
		{name: "RWMutex writer", waiter: writer.writer, key: "lent:rw",
			hold: writerHolder.Lock, release: writerHolder.Unlock, lock: writer.Lock, unlock: writer.Unlock},
		{name: "Semaphore", waiter: semaphore.waiter, key: permitKey("lent:semaphore", 0),
			hold: func(ctx context.Context) (err error) {
				held, err = semaphoreHolder.Acquire(ctx)
				return err
			},
			release: func(ctx context.Context) error { return held.Release(ctx) },
			lock: func(ctx context.Context) (err error) {
				permit, err = semaphore.Acquire(ctx)
				return err
			},
			unlock: func(ctx context.Context) error { return permit.Release(ctx) }},
	} {
		if c.hold == nil {
			holderOptions := options
			if c.fair {
				holderOptions = fair
			}
			holder := holders.NewMutex(c.key, holderOptions)
			c.hold, c.release, c.lock, c.unlock = holder.Lock, holder.Unlock, c.waiter.Lock, c.waiter.Unlock
		}
		require.NoError(t, c.hold(ctx), c.name)
		onEveryNode(t, nodes, c.key)
		locked := make(chan error, 1)
		go func() { locked <- c.lock(ctx) }()
		require.True(t, waitUntil(func() bool { return c.waiter.waiter().Listening() }), "%s: the Lock does not wait", c.name)
		require.NoError(t, c.release(ctx), c.name)
		require.NoError(t, <-locked, c.name)
		assertNoLentWait(t, c.waiter, 1, c.name)
		if c.fair {
			assert.Nil(t, c.waiter.acquisition.extras, "the fair Mutex's extras name a place in line")
		}
		require.NoError(t, c.unlock(ctx), c.name)
	}
}

// A Lock that fails gives its wait state back on each way out: its
// context ends, MaxTries attempts failed, or the Client closes.
func TestLockThatFailedKeepsNoLentWaitState(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holders := nodes.client(t, Options{})
	for _, options := range []MutexOptions{{TTL: 10 * time.Second}, {TTL: 10 * time.Second, Fair: true}} {
		holder := holders.NewMutex("lent:failed", options)
		require.NoError(t, holder.Lock(ctx))
		onEveryNode(t, nodes, "lent:failed")

		waiters := nodes.client(t, retryHourly)
		m := waiters.NewMutex("lent:failed", options)
		waited, stop := context.WithCancel(ctx)
		locked := make(chan error, 1)
		go func() { locked <- m.Lock(waited) }()
		require.True(t, waitUntil(func() bool { return m.waiter().Listening() }), "the Lock does not wait")
		stop()
		require.ErrorIs(t, <-locked, context.Canceled)
		assertNoLentWait(t, m, 1, "context ended")
		assert.Nil(t, m.acquisition.extras, "context ended: the extras name a place in line")

		tries := options
		tries.MaxTries = 2
		limited := nodes.client(t, Options{RetryDelayMin: time.Millisecond, RetryDelayMax: time.Millisecond}).NewMutex("lent:failed", tries)
		require.ErrorIs(t, limited.Lock(ctx), ErrNotAcquired)
		assertNoLentWait(t, limited, 1, "MaxTries")

		go func() { locked <- m.Lock(ctx) }()
		require.True(t, waitUntil(func() bool { return m.waiter().Listening() }), "the Lock does not wait again")
		require.NoError(t, waiters.Close())
		require.ErrorIs(t, <-locked, ErrClosed)
		assertNoLentWait(t, m, 1, "closed")
		require.NoError(t, holder.Unlock(ctx))
	}
}

// A wait state given back serves the next Lock of the Client, on another
// key, which a release of its own key wakes.
func TestLentWaitStateServesTheNextLock(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holders, waiters := nodes.client(t, Options{}), nodes.client(t, retryHourly)
	options := MutexOptions{TTL: 10 * time.Second}
	var lent *waitState
	for i, key := range []string{"lent:first", "lent:second"} {
		holder := holders.NewMutex(key, options)
		require.NoError(t, holder.Lock(ctx))
		onEveryNode(t, nodes, key)
		m := waiters.NewMutex(key, options)
		locked := make(chan error, 1)
		go func() { locked <- m.Lock(ctx) }()
		require.True(t, waitUntil(func() bool { return m.waiter().Listening() }), "%s: the Lock does not wait", key)
		if i == 0 {
			lent = m.wait.Load()
		} else {
			assert.Same(t, lent, m.wait.Load(), "the second Lock did not borrow the wait state given back")
		}
		require.NoError(t, holder.Unlock(ctx))
		require.NoError(t, <-locked, key)
		assertNoLentWait(t, m, 1, key)
		require.NoError(t, m.Unlock(ctx))
	}
}
