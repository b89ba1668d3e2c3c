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
	"github.com/lockmux/lockmux/resp"
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
	waiter.notifier.mu.Lock()
	if assert.Len(t, waiter.notifier.waiters, 1) {
		assert.True(t, waiter.notifier.waiters[m.releasedChannels()[0]].isIdle)
	}
	waiter.notifier.mu.Unlock()
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

// releaseMessage is the push a subscription connection receives when a
// node publishes the release of key with token.
func releaseMessage(key, token string) resp.Value {
	text := func(s string) resp.Value { return resp.Value{Type: resp.TypeBulkString, Str: []byte(s)} }
	return resp.Value{Type: resp.TypePush, Elems: []resp.Value{text("message"), text(releasedChannelPrefix + key), text(token)}}
}

// One release wakes one waiter, once a quorum of nodes has announced it,
// however many nodes announce it; a release of this Client wakes its
// waiter at once and its announcements wake nobody else. Waking one
// waiter per node would make them collide: every attempt but one fails,
// a round of the N nodes each.
func TestOneReleaseWakesOneWaiter(t *testing.T) {
	client := &Client{need: 3} // five nodes; no subscription connections
	n := &client.notifier
	n.client = client
	n.waiters, n.notifying = make(map[string]*channelWaiters), 5 // as if started, and every node notifying
	waiters := make([]*Mutex, 4)
	for i := range waiters {
		waiters[i] = &Mutex{client: client, key: "k", keys: []string{"k"}}
		waiters[i].wait.notify = make(chan struct{}, 1)
		waiters[i].wait.listening.Store(true)
		require.True(t, n.register(waiters[i]))
	}
	woken := func() int {
		count := 0
		for _, m := range waiters {
			select {
			case <-m.wait.notify:
				count++
			default:
			}
		}
		return count
	}

	for node := 1; node <= 5; node++ {
		n.deliver(0, releaseMessage("k", "first"))
		if node < 3 {
			assert.Zero(t, woken(), "node %d of 5 announced the release: no quorum yet", node)
		}
	}
	assert.Equal(t, 1, woken(), "five nodes announced one release")

	n.deliver(0, releaseMessage("k", "second"))
	n.released(waiters[0], []byte("second")) // this Client released it
	assert.Equal(t, 1, woken(), "a release of this Client wakes one waiter at once")
	for range 4 {
		n.deliver(0, releaseMessage("k", "second"))
	}
	assert.Zero(t, woken(), "the nodes' announcements of a release already woken for")

	n.deliver(0, releaseMessage("k", ""))
	assert.Equal(t, 1, woken(), "a message without a token wakes one waiter by itself")
}

// A release of several keys is announced on the channel of each, and
// counted per channel: it wakes a waiter once a quorum of nodes announced
// it on that channel, one waiter per key, and none for a key on which a
// waiter woken for the same release waits too: that waiter's attempt tries
// the key already.
func TestOneReleaseWakesOneWaiterPerKey(t *testing.T) {
	client := &Client{need: 3} // five nodes; no subscription connections
	n := &client.notifier
	n.client = client
	n.waiters, n.notifying = make(map[string]*channelWaiters), 5 // as if started, and every node notifying
	waiter := func(keys ...string) *Mutex {
		m := &Mutex{client: client, key: keys[0], keys: keys}
		m.wait.notify = make(chan struct{}, 1)
		m.wait.listening.Store(true)
		require.True(t, n.register(m))
		return m
	}
	both, onlyA, onlyB := waiter("a", "b"), waiter("a"), waiter("b")
	woken := func() []*Mutex {
		var woken []*Mutex
		for _, m := range []*Mutex{both, onlyA, onlyB} {
			select {
			case <-m.wait.notify:
				woken = append(woken, m)
			default:
			}
		}
		return woken
	}

	for range 2 {
		n.deliver(0, releaseMessage("a", "of-a-and-b"))
		n.deliver(0, releaseMessage("b", "of-a-and-b"))
	}
	assert.Empty(t, woken(), "two nodes of five announced the release on each channel: no quorum on either")
	n.deliver(0, releaseMessage("a", "of-a-and-b"))
	assert.Equal(t, []*Mutex{both}, woken(), "a quorum on a: the longest waiting on a")
	for range 3 {
		n.deliver(0, releaseMessage("b", "of-a-and-b"))
	}
	assert.Empty(t, woken(), "a quorum on b: the waiter woken for the release tries b too")

	for range 3 {
		n.deliver(0, releaseMessage("b", "of-b"))
	}
	assert.Equal(t, []*Mutex{onlyB}, woken(), "the next release of b: the longest waiting on b and listening")
}

// A waiter that leaves without the lock passes a release's wake-up on
// when no attempt of its own answered it, and wakes nobody otherwise: a
// wake-up without a release could not win.
func TestLeavingWaiterPassesOnOnlyAReleaseWakeUp(t *testing.T) {
	client := &Client{need: 1} // one node; no subscription connections
	n := &client.notifier
	n.client = client
	n.waiters, n.notifying = make(map[string]*channelWaiters), 1
	waiters := make([]*Mutex, 3)
	for i := range waiters {
		waiters[i] = &Mutex{client: client, key: "k", keys: []string{"k"}}
		waiters[i].wait.notify = make(chan struct{}, 1)
		waiters[i].wait.listening.Store(true)
		require.True(t, n.register(waiters[i]))
	}
	woken := func(m *Mutex) bool {
		select {
		case <-m.wait.notify:
			return true
		default:
			return false
		}
	}

	n.unregister(waiters[2], false)
	assert.False(t, woken(waiters[0]) || woken(waiters[1]), "a waiter that was not woken for a release leaves: nobody is woken")

	n.deliver(0, releaseMessage("k", "first"))
	require.True(t, woken(waiters[0]), "the release wakes the longest waiting")
	n.unregister(waiters[0], false) // its context ended before it tried
	assert.True(t, woken(waiters[1]), "the wake-up is passed on")
}

// A subscription confirmed by a node after the quorum's look ends the
// wait of a waiter whose last attempt was a split vote: a release may have
// reached that node before its subscription and the other nodes after the
// attempt, so that the nodes that announce it make no quorum, and only the
// waiter's own attempt finds the lock free. After an attempt that every
// node refused, the quorum hears the release: the waiter goes on waiting.
func TestLateConfirmationEndsTheWaitAfterASplitVote(t *testing.T) {
	client := &Client{need: 2, closing: make(chan struct{})} // three nodes; no subscription connections
	n := &client.notifier
	n.client = client
	n.waiters, n.notifying, n.cannot = make(map[string]*channelWaiters), 3, make([]error, 3)
	m := &Mutex{client: client, key: "k", keys: []string{"k"}}
	m.wait.notify = make(chan struct{}, 1)
	require.True(t, n.register(m))

	n.deliver(0, subscribeConfirmation("k"))
	assert.Zero(t, m.wait.causes.Load(), "one node of three confirmed: no quorum yet")
	n.deliver(1, subscribeConfirmation("k"))
	assert.Equal(t, causeLook, m.wait.causes.Swap(0), "a quorum confirmed: the waiter looks")
	n.deliver(1, releaseMessage("k", "half-heard"))
	assert.Zero(t, m.wait.causes.Load(), "one announcement of a release is no quorum")
	n.deliver(2, subscribeConfirmation("k"))
	assert.Equal(t, causeConfirmedLate, m.wait.causes.Load(), "node 2 confirmed late")
	n.deliver(2, subscribeConfirmation("k"))
	assert.Equal(t, causeConfirmedLate, m.wait.causes.Load(), "a node's second confirmation is no news")

	for _, split := range []bool{false, true} {
		m.wake(causeConfirmedLate)
		m.wait.split = split
		ctx, cancel := context.WithCancel(context.Background())
		if !split {
			cancel() // the wait goes on: only the context ends it
		}
		err := m.sleep(ctx, time.Hour, waitBackoff, 0)
		cancel()
		if split {
			assert.NoError(t, err, "after a split vote, the late confirmation ends the wait")
		} else {
			assert.ErrorIs(t, err, context.Canceled, "after an attempt every node refused, the wait goes on")
		}
	}
}

// subscribeConfirmation is a node's confirmation of the subscription to
// the release channel of key.
func subscribeConfirmation(key string) resp.Value {
	return resp.Value{Type: resp.TypePush, Elems: []resp.Value{
		{Type: resp.TypeBulkString, Str: []byte("subscribe")},
		{Type: resp.TypeBulkString, Str: []byte(releasedChannelPrefix + key)},
		{Type: resp.TypeInteger, Int: 1},
	}}
}
