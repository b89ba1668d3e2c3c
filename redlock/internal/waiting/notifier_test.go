package waiting

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/resp"
)

// handRoom returns a Notifier of nodes nodes and quorum need, not started.
func handRoom(nodes, need int) *Notifier {
	n := &Notifier{}
	n.Init(Config{Nodes: nodes, Need: need, Closed: func() bool { return false }, Closing: make(chan struct{})})
	return n
}

// handLockState is a lock of some kind whose release channels are given.
type handLockState struct {
	kind     Kind
	channels []string
}

func (l *handLockState) Kind() Kind                 { return l.kind }
func (l *handLockState) ReleasedChannels() []string { return l.channels }

// handLock returns a Waiter of a lock of kind on keys in n.
func handLock(n *Notifier, kind Kind, keys ...string) *Waiter {
	lock := &handLockState{kind: kind}
	for _, key := range keys {
		lock.channels = append(lock.channels, naming.ReleasedChannelPrefix+key)
	}
	w := &Waiter{}
	w.Init(n, lock)
	return w
}

// handNotifier returns a notifier of one node, started as if it had
// subscription connections, whose pushes the test delivers by hand; it
// keeps at most idleLimit idle channels.
func handNotifier(idleLimit int) *Notifier {
	n := handRoom(1, 1)
	n.IdleLimit = idleLimit
	n.waiters, n.notifying, n.cannot = make(map[string]*channelWaiters), 1, make([]error, 1)
	return n
}

// handWaiter returns a Waiter on key for a handNotifier.
func handWaiter(n *Notifier, keys ...string) *Waiter {
	return handLock(n, KindPlain, keys...)
}

// woken reports whether m was woken to look, and forgets it.
func woken(m *Waiter) bool {
	select {
	case <-m.notify:
		return m.causes.Swap(0)&causeLook != 0
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
	assert.True(t, m.subscribing, "a new subscription")
	n.Deliver(0, subscribeConfirmation("a"))
	assert.True(t, woken(m), "the confirmation makes the waiter look")
	n.unregister(m, true)

	channel := n.waiters[naming.ReleasedChannelPrefix+"a"]
	require.NotNil(t, channel, "kept after its last waiter left")
	assert.True(t, channel.isIdle)
	require.True(t, n.register(m))
	assert.False(t, m.subscribing, "the kept subscription is confirmed")
	assert.False(t, channel.isIdle)
	assert.False(t, woken(m), "no look: nothing was announced since the attempt began")
	n.unregister(m, true)

	for _, key := range []string{"b", "c"} {
		other := handWaiter(n, key)
		require.True(t, n.register(other))
		n.unregister(other, true)
	}
	assert.NotContains(t, n.waiters, naming.ReleasedChannelPrefix+"a", "idle the longest, beyond the limit of 2")
	assert.Contains(t, n.waiters, naming.ReleasedChannelPrefix+"b")
	assert.Contains(t, n.waiters, naming.ReleasedChannelPrefix+"c")
	assert.Equal(t, 2, n.idle.count)
}

// A release announced on an idle channel wakes nobody: a waiter whose
// failed attempt began before it, and that registers after it, looks once
// more; one whose attempt began after it does not.
func TestReleaseOnAnIdleChannelMakesTheNextWaiterLook(t *testing.T) {
	n := handNotifier(1)
	m := handWaiter(n, "k")
	require.True(t, n.register(m))
	n.Deliver(0, subscribeConfirmation("k"))
	woken(m)
	n.unregister(m, true)

	m.unheardBefore = n.unheard.Load() // the attempt begins
	n.Deliver(0, releaseMessage("k", "unheard"))
	require.True(t, n.register(m))
	assert.True(t, woken(m), "released after the attempt began")
	n.unregister(m, false)

	n.Deliver(0, releaseMessage("k", "heard"))
	m.unheardBefore = n.unheard.Load() // the attempt begins after it
	require.True(t, n.register(m))
	assert.False(t, woken(m), "released before the attempt began")
	n.unregister(m, false)
}

// releaseMessage is the push a subscription connection receives when a
// node publishes the release of key with token.
func releaseMessage(key, token string) resp.Value {
	text := func(s string) resp.Value { return resp.Value{Type: resp.TypeBulkString, Str: []byte(s)} }
	return resp.Value{Type: resp.TypePush, Elems: []resp.Value{text("message"), text(naming.ReleasedChannelPrefix + key), text(token)}}
}

// One release wakes one waiter, once a quorum of nodes has announced it,
// however many nodes announce it; a release of this Client wakes its
// waiter at once and its announcements wake nobody else. Waking one
// waiter per node would make them collide: every attempt but one fails,
// a round of the N nodes each.
func TestOneReleaseWakesOneWaiter(t *testing.T) {
	n := handRoom(5, 3)                                          // five nodes; no subscription connections
	n.waiters, n.notifying = make(map[string]*channelWaiters), 5 // as if started, and every node notifying
	waiters := make([]*Waiter, 4)
	for i := range waiters {
		waiters[i] = handWaiter(n, "k")
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
		n.Deliver(0, releaseMessage("k", "first"))
		if node < 3 {
			assert.Zero(t, woken(), "node %d of 5 announced the release: no quorum yet", node)
		}
	}
	assert.Equal(t, 1, woken(), "five nodes announced one release")

	n.Deliver(0, releaseMessage("k", "second"))
	n.Released(waiters[0].lock, []byte("second")) // this Client released it
	assert.Equal(t, 1, woken(), "a release of this Client wakes one waiter at once")
	for range 4 {
		n.Deliver(0, releaseMessage("k", "second"))
	}
	assert.Zero(t, woken(), "the nodes' announcements of a release already woken for")

	n.Deliver(0, releaseMessage("k", ""))
	assert.Equal(t, 1, woken(), "a message without a token wakes one waiter by itself")
}

// A release of several keys is announced on the channel of each, and
// counted per channel: it wakes a waiter once a quorum of nodes announced
// it on that channel, one waiter per key, and none for a key on which a
// waiter woken for the same release waits too: that waiter's attempt tries
// the key already.
func TestOneReleaseWakesOneWaiterPerKey(t *testing.T) {
	n := handRoom(5, 3)                                          // five nodes; no subscription connections
	n.waiters, n.notifying = make(map[string]*channelWaiters), 5 // as if started, and every node notifying
	waiter := func(keys ...string) *Waiter {
		m := handWaiter(n, keys...)
		m.listening.Store(true)
		require.True(t, n.register(m))
		return m
	}
	both, onlyA, onlyB := waiter("a", "b"), waiter("a"), waiter("b")
	woken := func() []*Waiter {
		var woken []*Waiter
		for _, m := range []*Waiter{both, onlyA, onlyB} {
			select {
			case <-m.notify:
				woken = append(woken, m)
			default:
			}
		}
		return woken
	}

	for range 2 {
		n.Deliver(0, releaseMessage("a", "of-a-and-b"))
		n.Deliver(0, releaseMessage("b", "of-a-and-b"))
	}
	assert.Empty(t, woken(), "two nodes of five announced the release on each channel: no quorum on either")
	n.Deliver(0, releaseMessage("a", "of-a-and-b"))
	assert.Equal(t, []*Waiter{both}, woken(), "a quorum on a: the longest waiting on a")
	for range 3 {
		n.Deliver(0, releaseMessage("b", "of-a-and-b"))
	}
	assert.Empty(t, woken(), "a quorum on b: the waiter woken for the release tries b too")

	for range 3 {
		n.Deliver(0, releaseMessage("b", "of-b"))
	}
	assert.Equal(t, []*Waiter{onlyB}, woken(), "the next release of b: the longest waiting on b and listening")
}

// A waiter that leaves without the lock passes a release's wake-up on
// when no attempt of its own answered it, and wakes nobody otherwise: a
// wake-up without a release could not win.
func TestLeavingWaiterPassesOnOnlyAReleaseWakeUp(t *testing.T) {
	n := handRoom(1, 1) // one node; no subscription connections
	n.waiters, n.notifying = make(map[string]*channelWaiters), 1
	waiters := make([]*Waiter, 3)
	for i := range waiters {
		waiters[i] = handWaiter(n, "k")
		waiters[i].listening.Store(true)
		require.True(t, n.register(waiters[i]))
	}
	woken := func(m *Waiter) bool {
		select {
		case <-m.notify:
			return true
		default:
			return false
		}
	}

	n.unregister(waiters[2], false)
	assert.False(t, woken(waiters[0]) || woken(waiters[1]), "a waiter that was not woken for a release leaves: nobody is woken")

	n.Deliver(0, releaseMessage("k", "first"))
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
	n := handRoom(3, 2) // three nodes; no subscription connections
	n.waiters, n.notifying, n.cannot = make(map[string]*channelWaiters), 3, make([]error, 3)
	m := handWaiter(n, "k")
	require.True(t, n.register(m))

	n.Deliver(0, subscribeConfirmation("k"))
	assert.Zero(t, m.causes.Load(), "one node of three confirmed: no quorum yet")
	n.Deliver(1, subscribeConfirmation("k"))
	assert.Equal(t, causeLook, m.causes.Swap(0), "a quorum confirmed: the waiter looks")
	n.Deliver(1, releaseMessage("k", "half-heard"))
	assert.Zero(t, m.causes.Load(), "one announcement of a release is no quorum")
	n.Deliver(2, subscribeConfirmation("k"))
	assert.Equal(t, causeConfirmedLate, m.causes.Load(), "node 2 confirmed late")
	n.Deliver(2, subscribeConfirmation("k"))
	assert.Equal(t, causeConfirmedLate, m.causes.Load(), "a node's second confirmation is no news")

	for _, split := range []bool{false, true} {
		m.wake(causeConfirmedLate)
		m.split = split
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
		{Type: resp.TypeBulkString, Str: []byte(naming.ReleasedChannelPrefix + key)},
		{Type: resp.TypeInteger, Int: 1},
	}}
}
