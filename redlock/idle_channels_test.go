package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// handNotifier returns a notifier of one node, started as if it had
// subscription connections, whose pushes the test delivers by hand; it
// keeps at most idleLimit idle channels.
func handNotifier(idleLimit int) *notifier {
	client := &Client{need: 1}
	n := &client.notifier
	n.client, n.idleLimit = client, idleLimit
	n.waiters, n.notifying, n.cannot = make(map[string]*channelWaiters), 1, make([]error, 1)
	return n
}

// handWaiter returns a Mutex on key for a handNotifier.
func handWaiter(n *notifier, key string) *Mutex {
	m := &Mutex{client: n.client, key: key, keys: []string{key}}
	m.wait.notify = make(chan struct{}, 1)
	return m
}

// woken reports whether m was woken to look, and forgets it.
func woken(m *Mutex) bool {
	select {
	case <-m.wait.notify:
		return m.wait.causes.Swap(0)&causeLook != 0
	default:
		return false
	}
}

// A channel whose last waiter left stays subscribed, idle, for the next
// waiter, which finds its subscription confirmed and waits without a look;
// beyond the limit, the channel idle the longest is dropped.
func TestIdleChannelsKeepTheirSubscriptions(t *testing.T) {
	n := handNotifier(2)
	m := handWaiter(n, "a")
	require.True(t, n.register(m))
	assert.True(t, m.wait.subscribing, "a new subscription")
	n.deliver(0, subscribeConfirmation("a"))
	assert.True(t, woken(m), "the confirmation makes the waiter look")
	n.unregister(m, true)

	channel := n.waiters[releasedChannelPrefix+"a"]
	require.NotNil(t, channel, "kept after its last waiter left")
	assert.True(t, channel.isIdle)
	require.True(t, n.register(m))
	assert.False(t, m.wait.subscribing, "the kept subscription is confirmed")
	assert.False(t, channel.isIdle)
	assert.False(t, woken(m), "no look: nothing was announced since the attempt began")
	n.unregister(m, true)

	for _, key := range []string{"b", "c"} {
		other := handWaiter(n, key)
		require.True(t, n.register(other))
		n.unregister(other, true)
	}
	assert.NotContains(t, n.waiters, releasedChannelPrefix+"a", "idle the longest, beyond the limit of 2")
	assert.Contains(t, n.waiters, releasedChannelPrefix+"b")
	assert.Contains(t, n.waiters, releasedChannelPrefix+"c")
	assert.Equal(t, 2, n.idle.count)
}

// A release announced on an idle channel wakes nobody: a waiter whose
// failed attempt began before it, and that registers after it, looks once
// more; one whose attempt began after it does not.
func TestReleaseOnAnIdleChannelMakesTheNextWaiterLook(t *testing.T) {
	n := handNotifier(1)
	m := handWaiter(n, "k")
	require.True(t, n.register(m))
	n.deliver(0, subscribeConfirmation("k"))
	woken(m)
	n.unregister(m, true)

	m.wait.unheardBefore = n.unheard.Load() // the attempt begins
	n.deliver(0, releaseMessage("k", "unheard"))
	require.True(t, n.register(m))
	assert.True(t, woken(m), "released after the attempt began")
	n.unregister(m, false)

	n.deliver(0, releaseMessage("k", "heard"))
	m.wait.unheardBefore = n.unheard.Load() // the attempt begins after it
	require.True(t, n.register(m))
	assert.False(t, woken(m), "released before the attempt began")
	n.unregister(m, false)
}

// Against real nodes: the subscription of a key nobody waits for any more
// stays on the nodes until more channels than the limit are idle.
func TestIdleSubscriptionsAreBounded(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 1, redistest.Options{})
	holders := nodes.client(t, Options{})
	waiters := nodes.client(t, Options{})
	waiters.notifier.idleLimit = 1
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, key := range []string{"a", "b"} {
		holder := holders.NewMutex(key, MutexOptions{TTL: 10 * time.Second})
		require.NoError(t, holder.Lock(ctx))
		waiter := waiters.NewMutex(key, MutexOptions{TTL: 10 * time.Second})
		locked := make(chan error, 1)
		go func() { locked <- waiter.Lock(ctx) }()
		awaitSubscribers(t, nodes.servers[0], releasedChannelPrefix+key, 1)
		require.NoError(t, holder.Unlock(ctx))
		require.NoError(t, <-locked)
		require.NoError(t, waiter.Unlock(ctx))
	}
	awaitSubscribers(t, nodes.servers[0], releasedChannelPrefix+"a", 0)
	awaitSubscribers(t, nodes.servers[0], releasedChannelPrefix+"b", 1)
}
