package redlock

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// A blocked Lock is woken by the release notification. Its own retries are
// an hour apart, so nothing else could wake it before the test times out.
// One node: with several, an attempt that meets a release half done is a
// split vote, whose backoff (the retry delay) is deaf to notifications.
func TestWaiterWakesOnRelease(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 1, redistest.Options{})
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
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(context.Background()) }()

	<-waiting
	require.NoError(t, holder.Unlock(context.Background()))
	require.NoError(t, <-locked, "with retries an hour apart, only the notification can have woken it")
	// Every attempt has a cause: the first look, and per node at most one
	// wake-up for the subscription being made, one for its confirmation and
	// one for the release message. More would be a loop.
	assert.LessOrEqual(t, len(observer.acquires), 1+3*len(nodes.servers), "attempts: only the looks that a subscription or a release caused")
	require.NoError(t, m.Unlock(context.Background()))

	// Nobody waits any more: the subscription is dropped.
	waiter.notifier.mu.Lock()
	assert.Empty(t, waiter.notifier.waiters)
	waiter.notifier.mu.Unlock()
}

// Waiting on a held lock costs almost no CPU: no busy loop, no polling at
// the retry delay (rueidis #602).
func TestWaitingCostsLittleCPU(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	holder := nodes.client(t, Options{}).NewMutex("k", MutexOptions{TTL: time.Minute})
	require.NoError(t, holder.Lock(context.Background()))
	waiter := nodes.client(t, Options{}).NewMutex("k", MutexOptions{TTL: time.Minute})

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
	waiters := make([]*Mutex, 4)
	for i := range waiters {
		waiters[i] = &Mutex{client: client, key: "k", notify: make(chan struct{}, 1)}
		waiters[i].listening.Store(true)
		require.True(t, n.register(waiters[i]))
	}
	woken := func() int {
		count := 0
		for _, m := range waiters {
			select {
			case <-m.notify:
				count++
			default:
			}
		}
		return count
	}

	for node := 1; node <= 5; node++ {
		n.deliver(releaseMessage("k", "first"))
		if node < 3 {
			assert.Zero(t, woken(), "node %d of 5 announced the release: no quorum yet", node)
		}
	}
	assert.Equal(t, 1, woken(), "five nodes announced one release")

	n.deliver(releaseMessage("k", "second"))
	n.released(waiters[0], []byte("second")) // this Client released it
	assert.Equal(t, 1, woken(), "a release of this Client wakes one waiter at once")
	for range 4 {
		n.deliver(releaseMessage("k", "second"))
	}
	assert.Zero(t, woken(), "the nodes' announcements of a release already woken for")

	n.deliver(releaseMessage("k", ""))
	assert.Equal(t, 1, woken(), "a message without a token wakes one waiter by itself")
}

// A Lock that finds goroutines of its Client listening for the release of
// its key queues behind them instead of making an attempt that must fail:
// the lock was held at their last look, and no release has come since.
// The longest waiter gets the lock first.
func TestLockQueuesBehindListeningWaiters(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 1, redistest.Options{})
	holders := nodes.client(t, Options{})
	observer := &recordingObserver{}
	failed := func() int {
		observer.mu.Lock()
		defer observer.mu.Unlock()
		count := 0
		for _, event := range observer.acquires {
			if event.Err != nil {
				count++
			}
		}
		return count
	}
	// Retries an hour apart: only notifications wake a waiter. A node
	// timeout of a minute: a subscription is always confirmed before the
	// waiter looks again on its own.
	waiters := nodes.client(t, Options{Observer: observer, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour, NodeTimeout: time.Minute})
	locked := make(chan *Mutex, 2)
	lock := func(m *Mutex) {
		if err := m.Lock(context.Background()); err != nil {
			t.Errorf("Lock: %v", err)
		}
		locked <- m
	}
	eventually := func(what string, condition func() bool) {
		for deadline := time.Now().Add(10 * time.Second); !condition(); runtime.Gosched() {
			require.True(t, time.Now().Before(deadline), what)
		}
	}

	// Warm-up, on a key of its own: a first wait dials the subscription
	// connection.
	warmHolder, warmWaiter := holders.NewMutex("warm", MutexOptions{}), waiters.NewMutex("warm", MutexOptions{})
	require.NoError(t, warmHolder.Lock(context.Background()))
	go lock(warmWaiter)
	eventually("the warm-up never waited", func() bool { return failed() >= 2 && warmWaiter.listening.Load() })
	require.NoError(t, warmHolder.Unlock(context.Background()))
	require.Same(t, warmWaiter, <-locked)
	require.NoError(t, warmWaiter.Unlock(context.Background()))

	holder := holders.NewMutex("k", MutexOptions{})
	first, second := waiters.NewMutex("k", MutexOptions{}), waiters.NewMutex("k", MutexOptions{})
	require.NoError(t, holder.Lock(context.Background()))
	before := failed()
	go lock(first)
	// The first Lock waits for the release once it looked, subscribed, had
	// the subscription confirmed and looked again.
	eventually("the first Lock never settled", func() bool {
		n := &waiters.notifier
		n.mu.Lock()
		defer n.mu.Unlock()
		r := n.releases[first.releasedChannel()]
		return failed() == before+2 && r != nil && r.confirmations == 1 && first.listening.Load() && len(first.notify) == 0
	})
	attempts := waiters.Stats().LockAttempts
	go lock(second)
	eventually("the second Lock never started to wait", func() bool { return waiters.notifier.waiting.Load() == 2 })
	assert.Equal(t, attempts, waiters.Stats().LockAttempts, "the second Lock queued without an attempt")

	require.NoError(t, holder.Unlock(context.Background()))
	require.Same(t, first, <-locked, "the longest waiter goes first")
	require.NoError(t, first.Unlock(context.Background()))
	require.Same(t, second, <-locked)
	require.NoError(t, second.Unlock(context.Background()))
	assert.Equal(t, attempts+2, waiters.Stats().LockAttempts, "one attempt per release")
}
