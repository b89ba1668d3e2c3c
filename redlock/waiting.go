package redlock

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/resp"
)

// releasedChannelPrefix starts the pub/sub channel on which the release
// script announces that a key is free; the key follows it. The name is
// defined in naming, which the doctor's check of the channels shares.
const releasedChannelPrefix = naming.ReleasedChannelPrefix

// notificationFallback multiplies the retry delay of a Lock that waits for
// a release notification: it retries on its own only that much later, in
// case a notification was lost (a node restarted, a holder's key expired).
// It applies while a quorum of nodes can notify; when too few can, a
// release would never be announced by a quorum, and waiters retry at the
// retry delay.
const notificationFallback = 8

// notifier wakes the Mutexes that wait for a lock to be released. It keeps
// one subscription connection per node, shared by every waiter of the
// Client, subscribed to the channels of the keys that somebody waits for
// and to nothing else. The connections and their listening goroutines
// start with the first waiter and end with the Client.
//
// A node that cannot notify (it speaks only RESP2, Options.Protocol is
// ProtocolRESP2, or its ACL refuses the release channels) is found out
// once, by the handshake of its connection or by the refusal of a
// subscription, and marked for the life of the Client; the observer is
// told once. The other nodes go on notifying. While fewer than a quorum of
// nodes can notify, waiters retry at the retry delay.
type notifier struct {
	client *Client

	waiting    atomic.Int64 // the number of registered waiters, read without mu
	mu         sync.Mutex
	waiters    map[string]*channelWaiters // channel → who waits on it; nil until the first waiter
	subscriber *mux.Subscriber            // made with the first waiter
	cannot     []error                    // per node, why it cannot notify; nil while it can
	notifying  int                        // the nodes that can notify
}

// channelWaiters is what the notifier keeps of a channel while somebody
// waits on it.
type channelWaiters struct {
	mutexes []*Mutex // in the order they began to wait
	release release  // the latest release announced on the channel
}

// release counts the nodes that announced one release of a lock, so that
// the release wakes one waiter, once a quorum of nodes has announced it:
// an attempt made sooner could not win.
type release struct {
	token [MaxTokenLength]byte
	size  int  // the length of token
	count int  // the nodes that announced it
	woken bool // a waiter was woken for it
}

// announced counts one node's announcement of the release of token and
// reports whether it is the one that should wake a waiter.
func (r *release) announced(token []byte, need int) bool {
	if !bytes.Equal(r.token[:r.size], token) {
		r.size = copy(r.token[:], token)
		r.count, r.woken = 0, false
	}
	r.count++
	if r.woken || r.count < need {
		return false
	}
	r.woken = true
	return true
}

// register adds m to the waiters of its key and subscribes to the key's
// channel if m is the first. It reports false when notifications are not
// available: too few nodes can notify a quorum. The caller then retries on
// its own, at the retry delay.
func (n *notifier) register(m *Mutex) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.waiters == nil && !n.client.closed.Load() {
		n.start()
	}
	return n.registerLocked(m)
}

// registerLocked is register once the subscriptions are made.
func (n *notifier) registerLocked(m *Mutex) bool {
	if n.notifying < n.client.need || n.client.closed.Load() {
		return false
	}
	channel := m.releasedChannel()
	waiters := n.waiters[channel]
	if waiters == nil {
		waiters = &channelWaiters{}
		n.waiters[channel] = waiters
		if n.subscriber != nil { // nil only in unit tests that deliver pushes by hand
			n.subscriber.Send(resp.AppendCommand(nil, "SUBSCRIBE", channel))
		}
	}
	waiters.mutexes = append(waiters.mutexes, m)
	n.waiting.Add(1)
	return true
}

// fallback returns the factor of the retry delay for a waiter that listens
// for release notifications: notificationFallback while a quorum of nodes
// can notify, otherwise 1.
func (n *notifier) fallback() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.notifying < n.client.need {
		return 1
	}
	return notificationFallback
}

// unregister removes m from the waiters of its key, and unsubscribes from
// the key's channel when nobody waits on it any more. A waiter that leaves
// without the lock (its context ended) may have been woken for a release:
// it passes the wake-up on.
func (n *notifier) unregister(m *Mutex, acquired bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	channel := m.releasedChannel()
	waiters := n.waiters[channel]
	if waiters != nil {
		for i, waiter := range waiters.mutexes {
			if waiter == m {
				waiters.mutexes = append(waiters.mutexes[:i], waiters.mutexes[i+1:]...)
				n.waiting.Add(-1)
				break
			}
		}
		if len(waiters.mutexes) > 0 {
			if !acquired {
				wakeOne(waiters.mutexes)
			}
			return
		}
	}
	delete(n.waiters, channel)
	if n.subscriber != nil {
		n.subscriber.Send(resp.AppendCommand(nil, "UNSUBSCRIBE", channel))
	}
}

// start makes the subscriptions, one connection per node, through which
// the nodes announce releases. It runs with n.mu held.
func (n *notifier) start() {
	c := n.client
	n.waiters = make(map[string]*channelWaiters)
	n.cannot = make([]error, len(c.addresses))
	n.notifying = len(c.addresses)
	n.subscriber = c.group.Subscribe(mux.SubscribeOptions{OnConnect: n.resubscribe, OnPush: n.deliver, OnUnavailable: n.unavailable})
}

// deliver handles a push of a subscription connection: the confirmation
// of a subscription wakes the channel's waiters, and a release wakes one
// of them once a quorum of nodes has announced it. A message without a
// token, from a release script that does not publish one, wakes one waiter
// by itself.
func (n *notifier) deliver(_ int, push resp.Value) {
	if len(push.Elems) < 2 {
		return
	}
	kind := string(push.Elems[0].Str)
	if kind != "message" && kind != "subscribe" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	waiters := n.waiters[string(push.Elems[1].Str)]
	if waiters == nil {
		return
	}
	if kind == "subscribe" {
		for _, m := range waiters.mutexes {
			m.wake() // the subscription is confirmed: look again
		}
		return
	}
	if len(push.Elems) >= 3 && len(push.Elems[2].Str) > 0 && !waiters.release.announced(push.Elems[2].Str, n.client.need) {
		return
	}
	wakeOne(waiters.mutexes)
}

// wakeOne wakes one of the waiters of a released lock, the one that waits
// longest among those listening for the release: one release makes one
// holder, and waking them all would only make them collide. A waiter that
// leaves without the lock passes the wake-up on (see notifier.unregister);
// the others retry on their own after the fallback delay.
func wakeOne(waiters []*Mutex) {
	for _, m := range waiters {
		if m.listening.Load() {
			m.wake()
			return
		}
	}
	if len(waiters) > 0 {
		waiters[0].wake()
	}
}

// released wakes at once one waiter of this Client on a key that one of its
// Mutexes just released, with the given token, without waiting for the
// notifications to come back from the nodes; they wake nobody else. It
// costs nothing when nobody waits.
func (n *notifier) released(m *Mutex, token []byte) {
	if n.waiting.Load() == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	// Counted as announced by a quorum: the nodes' own announcements of it,
	// before or after this, wake nobody else.
	if waiters := n.waiters[m.releasedChannel()]; waiters != nil && waiters.release.announced(token, 0) {
		wakeOne(waiters.mutexes)
	}
}

// close closes the subscriptions and waits for their goroutines.
func (n *notifier) close() {
	n.mu.Lock()
	subscriber := n.subscriber
	n.mu.Unlock()
	if subscriber != nil {
		subscriber.Close()
	}
}
