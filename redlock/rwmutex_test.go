package redlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// rwNodes starts three real servers: the read/write scripts read the
// nodes' clocks (TIME) and sorted sets as redis-server has them.
func rwNodes(t *testing.T) *cluster {
	t.Helper()
	redistest.RequireReal(t)
	return startCluster(t, 3, redistest.Options{})
}

// Readers share the lock, each its own hold; a writer is refused while
// any of them holds it, and holds it alone once they left.
func TestRWMutexReadersShareAndExcludeAWriter(t *testing.T) {
	nodes := rwNodes(t)
	ctx := context.Background()
	options := MutexOptions{TTL: 10 * time.Second}
	first, second := nodes.client(t, Options{}).NewRWMutex("doc", options), nodes.client(t, Options{}).NewRWMutex("doc", options)
	writer := nodes.client(t, Options{}).NewRWMutex("doc", options)

	require.NoError(t, first.RLock(ctx))
	require.NoError(t, second.TryRLock(ctx), "readers share")
	assert.NotEqual(t, first.Reader().Token(), second.Reader().Token())
	require.ErrorIs(t, writer.TryLock(ctx), ErrNotAcquired, "a writer while readers hold")
	require.NoError(t, first.RUnlock(ctx))
	require.ErrorIs(t, writer.TryLock(ctx), ErrNotAcquired, "one reader is enough to refuse")
	require.NoError(t, second.RUnlock(ctx))

	require.NoError(t, writer.Lock(ctx), "the waiting marker is the writer's own")
	require.ErrorIs(t, first.TryRLock(ctx), ErrNotAcquired, "a reader while a writer holds")
	require.ErrorIs(t, second.TryLock(ctx), ErrNotAcquired, "another writer")
	require.NoError(t, writer.Unlock(ctx))
	require.NoError(t, first.TryRLock(ctx))
	require.NoError(t, first.RUnlock(ctx))
}

// Writers come first: a writer refused by a reader keeps new readers off
// until its next attempt, and gets the lock when the reader leaves, before
// any new reader.
func TestRWMutexWritersComeFirst(t *testing.T) {
	nodes := rwNodes(t)
	ctx := context.Background()
	options := MutexOptions{TTL: 10 * time.Second}
	reader := nodes.client(t, Options{}).NewRWMutex("report", options)
	// Its waiting marker lasts eight retry delays: far longer than the test.
	writer := nodes.client(t, Options{RetryDelayMin: time.Second, RetryDelayMax: 5 * time.Second}).NewRWMutex("report", options)
	late := nodes.client(t, Options{}).NewRWMutex("report", options)

	require.NoError(t, reader.RLock(ctx))
	require.ErrorIs(t, writer.TryLock(ctx), ErrNotAcquired)
	require.ErrorIs(t, late.TryRLock(ctx), ErrNotAcquired, "a new reader waits behind the waiting writer")
	require.NoError(t, reader.RUnlock(ctx))
	require.NoError(t, writer.TryLock(ctx), "the writer, once the reader left")
	require.NoError(t, writer.Unlock(ctx))
	require.NoError(t, late.TryRLock(ctx), "readers again once the writer left")
	require.NoError(t, late.RUnlock(ctx))
}

// A reader that never releases (its process crashed) frees the lock when
// its TTL ends by the node's clock, and a waiting writer learns when from
// the refusals: it takes the lock then, without a release to wake it.
func TestRWMutexReaderThatCrashedFreesItself(t *testing.T) {
	nodes := rwNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	crashed := nodes.client(t, Options{}).NewRWMutex("cache", MutexOptions{TTL: 300 * time.Millisecond})
	require.NoError(t, crashed.RLock(ctx))
	until := crashed.Reader().Until()

	retryLate := Options{RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}
	writer := nodes.client(t, retryLate).NewRWMutex("cache", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, writer.Lock(ctx))
	assert.False(t, time.Now().Before(until), "the writer waited for the reader's validity")
	require.NoError(t, writer.Unlock(ctx))
}

// A writer waiting for the readers is woken by the release of the last
// one, although it would retry on its own only every hour.
func TestRWMutexWriterIsWokenByTheReadersRelease(t *testing.T) {
	nodes := rwNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reader := nodes.client(t, Options{}).NewRWMutex("ledger", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, reader.RLock(ctx))
	onEveryNode(t, nodes, "ledger"+readersKeySuffix)
	observer := &failedAttempts{failed: make(chan struct{}, 64)}
	retryLate := Options{Observer: observer, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}
	writer := nodes.client(t, retryLate).NewRWMutex("ledger", MutexOptions{TTL: 10 * time.Second})
	locked := make(chan error, 1)
	go func() { locked <- writer.Lock(ctx) }()
	<-observer.failed
	require.NoError(t, reader.RUnlock(ctx))
	require.NoError(t, <-locked)
	require.NoError(t, writer.Unlock(ctx))
}

// A read hold is not upgraded, and a write hold does not take a read hold
// but turns into one with Downgrade: other readers may then join, and
// writers wait.
func TestRWMutexRefusesUpgradesAndDowngrades(t *testing.T) {
	nodes := rwNodes(t)
	ctx := context.Background()
	options := MutexOptions{TTL: 10 * time.Second}
	rw := nodes.client(t, Options{}).NewRWMutex("index", options)
	other := nodes.client(t, Options{}).NewRWMutex("index", options)

	require.NoError(t, rw.RLock(ctx))
	require.ErrorIs(t, rw.Lock(ctx), ErrWouldDeadlock)
	require.ErrorIs(t, rw.TryLock(ctx), ErrWouldDeadlock)
	require.NoError(t, rw.RUnlock(ctx))

	require.NoError(t, rw.Lock(ctx))
	require.ErrorIs(t, rw.RLock(ctx), ErrWouldDeadlock)
	require.ErrorIs(t, rw.TryRLock(ctx), ErrWouldDeadlock)
	require.NoError(t, rw.Downgrade(ctx))
	assert.True(t, rw.Writer().Until().IsZero(), "the write hold is released")
	assert.False(t, rw.Reader().Until().IsZero(), "the read hold is held")
	require.NoError(t, other.TryRLock(ctx), "another reader joins")
	require.NoError(t, other.RUnlock(ctx))
	require.ErrorIs(t, other.TryLock(ctx), ErrNotAcquired, "a writer waits for the downgraded reader")
	require.NoError(t, rw.RUnlock(ctx))
	assert.ErrorIs(t, rw.Downgrade(ctx), ErrNotHeld)
}

// A Downgrade is refused when another writer holds the lock: the read
// hold it takes passes only the RWMutex's own write hold.
func TestRWMutexDowngradePassesOnlyItsOwnWriter(t *testing.T) {
	nodes := rwNodes(t)
	ctx := context.Background()
	options := MutexOptions{TTL: 10 * time.Second}
	holder := nodes.client(t, Options{}).NewRWMutex("journal", options)
	require.NoError(t, holder.Lock(ctx))

	// The reader's script, given another writer's token as the owner,
	// refuses: only the writer key's own value passes.
	reader := nodes.client(t, Options{}).NewRWMutex("journal", options).Reader()
	require.True(t, reader.turn.TryTake())
	reader.acquisition.extras = [][]byte{[]byte("not-the-holder")}
	elapsed, generation, err := reader.attempt(ctx, 1)
	reader.acquisition.extras = nil
	_, err = reader.tried(elapsed, generation, err, nil)
	require.ErrorIs(t, err, ErrNotAcquired)
	require.NoError(t, holder.Unlock(ctx))
}

// The writer's holds get fences that increase from hold to hold; the
// readers' have none.
func TestRWMutexWritersGetFences(t *testing.T) {
	nodes := rwNodes(t)
	ctx := context.Background()
	rw := nodes.client(t, Options{}).NewRWMutex("accounts", MutexOptions{TTL: 10 * time.Second, Fencing: true})
	var fences []int64
	for range 2 {
		require.NoError(t, rw.Lock(ctx))
		fences = append(fences, rw.Writer().Fence())
		require.NoError(t, rw.Unlock(ctx))
	}
	assert.Greater(t, fences[1], fences[0])
	assert.Positive(t, fences[0])
	require.NoError(t, rw.RLock(ctx))
	assert.Zero(t, rw.Reader().Fence())
	require.NoError(t, rw.RUnlock(ctx))
}

// A renewed read hold lives past its TTL, by its entry's new expiry.
func TestRWMutexRenewsAReadHold(t *testing.T) {
	nodes := rwNodes(t)
	ctx := context.Background()
	observer := &extendObserver{extensions: make(chan ExtendEvent, 4)}
	rw := nodes.client(t, Options{Observer: observer}).NewRWMutex("feed", MutexOptions{TTL: 600 * time.Millisecond, AutoExtend: true})
	require.NoError(t, rw.RLock(ctx))
	first := rw.Reader().Until()
	for range 2 {
		event := <-observer.extensions
		require.NoError(t, event.Err)
	}
	assert.True(t, rw.Reader().Until().After(first), "the validity moved")
	writer := nodes.client(t, Options{}).NewRWMutex("feed", MutexOptions{TTL: 10 * time.Second})
	require.ErrorIs(t, writer.TryLock(ctx), ErrNotAcquired, "the renewed reader still holds")
	require.NoError(t, rw.RUnlock(ctx))
}

// An RWMutex is one resource with a hold of each kind: Keys and Token are
// refused.
func TestRWMutexRefusesKeysAndToken(t *testing.T) {
	client := startCluster(t, 1, redistest.Options{}).client(t, Options{})
	ctx := context.Background()
	for name, options := range map[string]MutexOptions{
		"MutexOptions.Keys":  {Keys: []string{"other"}},
		"MutexOptions.Token": {Token: "shared"},
	} {
		rw := client.NewRWMutex("refused", options)
		err := rw.RLock(ctx)
		require.ErrorIs(t, err, ErrInvalidOptions, name)
		assert.Contains(t, err.Error(), name)
		assert.ErrorIs(t, rw.Lock(ctx), ErrInvalidOptions, name)
	}
}

// The waiting marker of a writer that gave up lapses: it lasts until the
// writer's next attempt would have come, eight retry delays and two node
// timeouts, not the writer's TTL.
func TestRWMutexWaitingMarkerLapses(t *testing.T) {
	nodes := rwNodes(t)
	ctx := context.Background()
	reader := nodes.client(t, Options{}).NewRWMutex("queue", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, reader.RLock(ctx))
	options := Options{NodeTimeout: 20 * time.Millisecond, RetryDelayMin: 10 * time.Millisecond, RetryDelayMax: 10 * time.Millisecond}
	writer := nodes.client(t, options).NewRWMutex("queue", MutexOptions{TTL: 10 * time.Second})
	require.ErrorIs(t, writer.TryLock(ctx), ErrNotAcquired)
	for i := range nodes.servers {
		pttl, err := strconv.Atoi(nodes.servers[i].Do(t, "PTTL", "queue"+waitingKeySuffix))
		require.NoError(t, err)
		assert.Positive(t, pttl, "node %d: the writer left its marker", i)
		assert.LessOrEqual(t, pttl, 8*10+2*20, "node %d: the marker lasts until the next attempt", i)
	}
	require.NoError(t, reader.RUnlock(ctx))
}

// The writer's release wakes every reader that waits for it, although
// they would retry on their own only every hour: readers share the lock.
func TestRWMutexWriterReleaseWakesEveryReader(t *testing.T) {
	nodes := rwNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	writer := nodes.client(t, Options{}).NewRWMutex("board", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, writer.Lock(ctx))
	onEveryNode(t, nodes, "board")
	readers := nodes.client(t, Options{RetryDelayMin: time.Hour, RetryDelayMax: time.Hour})
	const count = 3
	locked := make(chan error, count)
	var waiting []*Mutex
	for range count {
		rw := readers.NewRWMutex("board", MutexOptions{TTL: 10 * time.Second})
		waiting = append(waiting, rw.Reader())
		go func() { locked <- rw.RLock(ctx) }() // held to the end: no reader's release wakes another
	}
	// Every reader waits for a release, its subscription confirmed (no
	// look is due), with nothing else due.
	require.True(t, waitUntil(func() bool {
		return settled(&readers.notifier, waiting)
	}), "the readers did not all wait")
	require.NoError(t, writer.Unlock(ctx))
	for range count {
		require.NoError(t, <-locked)
	}
	for _, m := range waiting {
		require.NoError(t, m.Unlock(ctx))
	}
}
