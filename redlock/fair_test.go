package redlock

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inLine returns how many waiters the queue of the fair lock key has on
// the node with the fewest.
func inLine(t *testing.T, nodes *cluster, key string) int {
	fewest := -1
	for _, server := range nodes.servers {
		count, err := strconv.Atoi(server.Do(t, "ZCARD", key+naming.QueueKeySuffix))
		require.NoError(t, err)
		if fewest < 0 || count < fewest {
			fewest = count
		}
	}
	return fewest
}

// Waiters are served in the order they came, whatever their retry delays:
// each one that is not first in line is refused, and the release of each
// holder hands the lock to the next.
func TestFairLockServesWaitersInOrder(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	options := MutexOptions{TTL: 10 * time.Second, Fair: true}
	holder := nodes.client(t, Options{}).NewMutex("turns", options)
	require.NoError(t, holder.Lock(ctx))

	const waiters = 4
	served := make(chan int, waiters)
	failed := make(chan error, waiters)
	for i := range waiters {
		// Short retry delays: an unfair lock would go to whoever tries
		// first after a release.
		m := nodes.client(t, Options{RetryDelayMin: time.Millisecond, RetryDelayMax: 5 * time.Millisecond}).NewMutex("turns", options)
		go func() {
			if err := m.Lock(ctx); err != nil {
				failed <- err
				return
			}
			served <- i
			failed <- m.Unlock(ctx)
		}()
		require.True(t, waitUntil(func() bool { return inLine(t, nodes, "turns") == i+1 }), "waiter %d did not take its place in line", i)
	}
	require.NoError(t, holder.Unlock(ctx))
	for i := range waiters {
		select {
		case got := <-served:
			assert.Equal(t, i, got, "served out of order")
		case <-ctx.Done():
			t.Fatal("a waiter was not served")
		}
		require.NoError(t, <-failed)
	}
	assert.Zero(t, inLine(t, nodes, "turns"), "the line is empty")
}

// While a waiter is in line, a newcomer is refused although the lock is
// free; once the waiter gave up and left the line, the newcomer gets it.
func TestFairLockNewcomerWaitsForTheLine(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	ctx := context.Background()
	options := MutexOptions{TTL: 10 * time.Second, Fair: true}
	holder := nodes.client(t, Options{}).NewMutex("counter", options)
	require.NoError(t, holder.Lock(ctx))
	// The waiter hears of no release (RESP2) and retries every hour: it
	// stays in line, first, while the lock is free.
	waiterContext, stopWaiting := context.WithCancel(ctx)
	waiter := nodes.client(t, Options{Protocol: ProtocolRESP2, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}).NewMutex("counter", options)
	waited := make(chan error, 1)
	go func() { waited <- waiter.Lock(waiterContext) }()
	require.True(t, waitUntil(func() bool { return inLine(t, nodes, "counter") == 1 }))
	require.NoError(t, holder.Unlock(ctx))

	newcomer := nodes.client(t, Options{}).NewMutex("counter", options)
	require.ErrorIs(t, newcomer.TryLock(ctx), ErrNotAcquired, "a newcomer while somebody waits in line")
	stopWaiting()
	require.ErrorIs(t, <-waited, context.Canceled)
	require.True(t, waitUntil(func() bool { return inLine(t, nodes, "counter") == 0 }), "the waiter that gave up left the line")
	require.NoError(t, newcomer.TryLock(ctx))
	require.NoError(t, newcomer.Unlock(ctx))
}

// A waiter whose process stopped trying leaves the line when its
// heartbeat lapses on the nodes: the next one is then first.
func TestFairLockWaiterThatStoppedLeavesTheLine(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, server := range nodes.servers {
		// A waiter of a process that died: first in line, its heartbeat
		// good for 300 ms more by the node's clock.
		seconds, err := strconv.ParseInt(server.Do(t, "EVAL", "return redis.call('TIME')[1]", "0"), 10, 64)
		require.NoError(t, err)
		server.Do(t, "ZADD", "jobs"+naming.QueueKeySuffix, "0", "gone")
		server.Do(t, "ZADD", "jobs"+naming.AliveKeySuffix, strconv.FormatInt((seconds+1)*1000+300, 10), "gone")
	}
	observer := &failedAttempts{failed: make(chan struct{}, 64)}
	m := nodes.client(t, Options{Observer: observer}).NewMutex("jobs", MutexOptions{TTL: 10 * time.Second, Fair: true})
	require.NoError(t, m.Lock(ctx))
	assert.NotEmpty(t, observer.failed, "the first attempt was refused: somebody was in line")
	assert.Zero(t, inLine(t, nodes, "jobs"))
	require.NoError(t, m.Unlock(ctx))
}

// A fair lock is one key: Keys is refused.
func TestFairLockRefusesKeys(t *testing.T) {
	client := startCluster(t, 1, redistest.Options{}).client(t, Options{})
	err := client.NewMutex("fair", MutexOptions{Fair: true, Keys: []string{"other"}}).Lock(context.Background())
	require.ErrorIs(t, err, ErrInvalidOptions)
	assert.Contains(t, err.Error(), "MutexOptions.Fair")
}

// A fair lock takes fences with Fencing: a newcomer's hold and the hold of
// a waiter served from the line each get a larger one, and a broken
// counter is refused as a Mutex's is.
func TestFairLockTakesFences(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	options := MutexOptions{TTL: 10 * time.Second, Fair: true, Fencing: true}
	holder := nodes.client(t, Options{}).NewMutex("fenced-line", options)
	require.NoError(t, holder.Lock(ctx))
	first := holder.Fence()
	assert.Positive(t, first)
	waiter := nodes.client(t, Options{}).NewMutex("fenced-line", options)
	locked := make(chan error, 1)
	go func() { locked <- waiter.Lock(ctx) }()
	require.True(t, waitUntil(func() bool { return inLine(t, nodes, "fenced-line") == 1 }))
	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, <-locked)
	assert.Greater(t, waiter.Fence(), first, "the waiter served from the line")
	require.NoError(t, waiter.Unlock(ctx))

	client := nodes.client(t, Options{})
	for node := range nodes.servers {
		client.do(t, node, "SET", "fenced-line"+fenceKeySuffix, "abc")
	}
	err := client.NewMutex("fenced-line", options).TryLock(ctx)
	require.ErrorIs(t, err, ErrFenceCounter)
	assert.Equal(t, repeat("", 3), client.values(t, "fenced-line"), "no lock key left behind")
}

// A release wakes the first waiter in line, although it waits in another
// client than the later waiters and would retry on its own only every
// hour: the release names it.
func TestFairLockReleaseWakesTheFirstInLine(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	options := MutexOptions{TTL: 10 * time.Second, Fair: true}
	holder := nodes.client(t, Options{}).NewMutex("ticket", options)
	require.NoError(t, holder.Lock(ctx))
	onEveryNode(t, nodes, "ticket")
	retryLate := Options{RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}
	first := nodes.client(t, retryLate).NewMutex("ticket", options)
	locked := make(chan error, 1)
	go func() { locked <- first.Lock(ctx) }()
	require.True(t, waitUntil(func() bool { return inLine(t, nodes, "ticket") == 1 }))
	later := nodes.client(t, retryLate)
	second := later.NewMutex("ticket", options)
	go func() { _ = second.Lock(ctx) }()
	require.True(t, waitUntil(func() bool { return inLine(t, nodes, "ticket") == 2 }))
	// Both wait for a release, their subscriptions confirmed.
	for _, m := range []*Mutex{first, second} {
		require.True(t, waitUntil(func() bool {
			return m.client.notifier.Settled(m.waiter())
		}))
	}
	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, <-locked, "the first in line was woken")
	require.NoError(t, first.Unlock(ctx))
}

// A waiter whose place in line lapsed while it was paused (a GC pause, a
// frozen VM: its heartbeat outlived on no node) joins the line again at
// its next attempt, at its back, and is served in turn while others
// cycle on the lock. Every step waits for the one before: the others
// release only once the next of them waits in line, so that each release
// names somebody, and the paused waiter tries only when the test wakes it
// or a release names it.
func TestFairLockWaiterThatLostItsPlaceIsServedAgain(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var running sync.WaitGroup
	defer func() {
		cancel()
		running.Wait()
	}()
	const key = "paused"
	options := MutexOptions{TTL: 10 * time.Second, Fair: true}
	retryLate := Options{RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}
	holder := nodes.client(t, Options{}).NewMutex(key, options)
	require.NoError(t, holder.Lock(ctx))
	onEveryNode(t, nodes, key)

	served := make(chan *Mutex, 8)
	attempts := &failedAttempts{failed: make(chan struct{}, 64)}
	withObserver := retryLate
	withObserver.Observer = attempts
	paused := nodes.client(t, withObserver).NewMutex(key, options)
	running.Add(1)
	go func() {
		defer running.Done()
		if paused.Lock(ctx) == nil {
			served <- paused
		}
	}()
	require.True(t, waitUntil(func() bool { return waitsInLine(t, nodes, paused) }), "the waiter did not take its place")
	pausedID, _ := lineIdentity(paused)

	// The pause: the waiter's heartbeat lapses on every node.
	for _, server := range nodes.servers {
		server.Do(t, "ZADD", key+naming.AliveKeySuffix, "XX", "1", pausedID)
	}
	// Two others take their places meanwhile, and their attempts drop the
	// paused waiter from the line.
	var others [2]*Mutex
	releases := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	for i := range others {
		others[i] = nodes.client(t, retryLate).NewMutex(key, options)
		running.Add(1)
		go func() {
			defer running.Done()
			for others[i].Lock(ctx) == nil {
				served <- others[i]
				select {
				case <-releases[i]:
				case <-ctx.Done():
				}
				if others[i].Unlock(context.Background()) != nil || ctx.Err() != nil {
					return
				}
			}
		}()
		require.True(t, waitUntil(func() bool { return waitsInLine(t, nodes, others[i]) }), "waiter %d did not take its place", i)
	}
	require.True(t, waitUntil(func() bool { return !queuedOnAnyNode(t, nodes, key, pausedID) }), "the lapsed place was not dropped")

	// The paused waiter wakes and tries again, while the lock is still held.
	for len(attempts.failed) > 0 {
		<-attempts.failed
	}
	paused.waiter().Look()
	select {
	case <-attempts.failed:
	case <-ctx.Done():
		t.Fatal("the paused waiter did not try again")
	}
	require.True(t, waitUntil(func() bool { return paused.waiter().Listening() }), "the paused waiter did not wait again")

	require.NoError(t, holder.Unlock(ctx))
	const turns = 6 // the others' acquisitions the waiter may wait
	for turn := 0; ; turn++ {
		var m *Mutex
		select {
		case m = <-served:
		case <-ctx.Done():
			t.Fatal("nobody was served")
		}
		if m == paused {
			assert.LessOrEqual(t, turn, 2, "served behind the two others, at most")
			require.NoError(t, paused.Unlock(ctx))
			return
		}
		require.Less(t, turn, turns, "the waiter that lost its place was not served while the others took the lock %d times", turns)
		// The holder releases once the other waits in line: its release
		// names the first in line.
		i := 0
		if m == others[0] {
			i = 1
		}
		require.True(t, waitUntil(func() bool { return waitsInLine(t, nodes, others[i]) }), "waiter %d did not take its place again", i)
		releases[1-i] <- struct{}{}
	}
}

// lineIdentity returns m's identity in the line of its fair lock, and
// whether it has a place.
func lineIdentity(m *Mutex) (string, bool) {
	return m.client.notifier.LineIdentity(m.waiter())
}

// waitsInLine reports whether m's Lock waits for a release with its place
// in line on every node and its subscriptions confirmed: a release that
// names it wakes it.
func waitsInLine(t *testing.T, nodes *cluster, m *Mutex) bool {
	id, lined := lineIdentity(m)
	if !lined {
		return false
	}
	for _, server := range nodes.servers {
		if !queuedOn(t, server, m.key, id) {
			return false
		}
	}
	return m.client.notifier.Settled(m.waiter())
}

// queuedOnAnyNode reports whether some node has the waiter id in the line
// of the fair lock key.
func queuedOnAnyNode(t *testing.T, nodes *cluster, key, id string) bool {
	for _, server := range nodes.servers {
		if queuedOn(t, server, key, id) {
			return true
		}
	}
	return false
}

// queuedOn reports whether server has the waiter id in the line of the
// fair lock key.
func queuedOn(t *testing.T, server *redistest.Server, key, id string) bool {
	return server.Do(t, "EVAL", "return redis.call('ZSCORE', KEYS[1], ARGV[1]) and 1 or 0", "1", key+naming.QueueKeySuffix, id) == "1"
}
