package redlock

import (
	"bytes"
	"math/rand/v2"
	"slices"
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
// a release notification: it tries again on its own only that much later,
// in case a release was not announced (a holder whose ACL refuses the
// channel, a holder's key that expired). It applies while a quorum of nodes
// can notify; when too few can, a release would never be announced by a
// quorum, and waiters retry at the retry delay.
const notificationFallback = 8

// releaseIdentityLength is the length of the identity under which a
// release is announced: 16 hexadecimal digits of a random 64-bit number,
// drawn by each Unlock.
const releaseIdentityLength = 16

// newReleaseIdentity fills dst with a new release identity. It tells one
// release from another, also when holds repeat their token
// (MutexOptions.Token); it needs to be unique, not secret.
func newReleaseIdentity(dst *[releaseIdentityLength]byte) {
	const digits = "0123456789abcdef"
	random := rand.Uint64()
	for i := range dst {
		dst[i] = digits[random&15]
		random >>= 4
	}
}

// notifier wakes the Mutexes that wait for a lock to be released. It keeps
// one subscription connection per node, shared by every waiter of the
// Client, subscribed to the channels of the keys that somebody waits for
// (every key of a multi-key Mutex) and to nothing else. The connections
// and their listening goroutines start with the first waiter and end with
// the Client.
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
	waiters    map[string]*channelWaiters // channel → who waits on it, or waited lately; nil until the first waiter
	subscriber *mux.Subscriber            // made with the first waiter
	cannot     []error                    // per node, why it cannot notify; nil while it can
	notifying  int                        // the nodes that can notify

	// idle lists the channels nobody waits on, whose subscriptions are
	// kept for the next waiter, the oldest first: at most idleLimit (see
	// idleChannels). unheard numbers the releases announced on them,
	// read without mu.
	idle      idleChannels
	idleLimit int
	unheard   atomic.Uint64
}

// channelWaiters is what the notifier keeps of a channel while somebody
// waits on it, and while it is idle (see idleChannels).
type channelWaiters struct {
	channel string   // its name, the key of notifier.waiters
	mutexes []*Mutex // in the order they began to wait
	release release  // the latest release announced on the channel

	// subscriptions says, per node, where the channel's subscription
	// stands; confirmations counts the nodes where it is confirmed.
	subscriptions []subscriptionState
	confirmations int

	// While nobody waits on the channel, it is linked into notifier.idle,
	// and unheard is the number (notifier.unheard) of the last release
	// announced on it since.
	idlePrevious, idleNext *channelWaiters
	isIdle                 bool
	unheard                uint64
}

// subscriptionState is where the subscription to one channel stands on one
// node.
type subscriptionState uint8

const (
	// subscriptionSent: the SUBSCRIBE is sent, or waits for the node's
	// connection, and not confirmed yet.
	subscriptionSent subscriptionState = iota
	// subscriptionConfirmed: the node confirmed it.
	subscriptionConfirmed
	// subscriptionRenewed: it was confirmed, the node's connection was
	// replaced, and the SUBSCRIBE is sent again: a release may have gone
	// unheard in between.
	subscriptionRenewed
)

// register adds m to the waiters of each of its keys and subscribes to the
// channels nobody listened to yet. When a channel of m is not yet
// confirmed by a quorum of nodes, m looks once more when it is (see
// notifier.confirmed). It reports false when notifications are not
// available: too few nodes can notify a quorum. The caller then retries
// on its own, at the retry delay.
func (n *notifier) register(m *Mutex) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.waiters == nil && !n.client.closed.Load() {
		n.start()
	}
	if n.notifying < n.client.need || n.client.closed.Load() {
		return false
	}
	var fresh []string
	look := false
	m.wait.subscribing, m.wait.wokenOn, m.wait.pickedFor = false, "", 0
	for _, channel := range m.releasedChannels() {
		waiters := n.waiters[channel]
		switch {
		case waiters == nil:
			waiters = &channelWaiters{channel: channel, subscriptions: make([]subscriptionState, len(n.cannot))}
			n.waiters[channel] = waiters
			fresh = append(fresh, channel)
		case waiters.isIdle:
			// Subscribed already: a release announced since m's last
			// attempt began woke nobody, and m looks once more.
			n.idle.remove(waiters)
			look = look || waiters.unheard > m.wait.unheardBefore
		}
		if waiters.confirmations < n.client.need {
			m.wait.subscribing = true
		}
		waiters.mutexes = append(waiters.mutexes, m)
	}
	if look {
		m.wake(causeLook)
	}
	if len(fresh) > 0 && n.subscriber != nil { // nil only in unit tests that deliver pushes by hand
		for _, command := range n.pushCommands(subscribe, fresh) {
			n.subscriber.Send(command)
		}
	}
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

// unregister removes m from the waiters of its keys. The channels nobody
// waits on any more stay subscribed for the next waiter, idle; beyond
// idleLimit of them, the oldest are unsubscribed. A waiter that leaves
// without the lock after it was picked for a release, and made no attempt
// since (its context ended), passes the wake-up on.
func (n *notifier) unregister(m *Mutex, acquired bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var emptied []string
	for _, channel := range m.releasedChannels() {
		waiters := n.waiters[channel]
		if waiters == nil {
			continue
		}
		if i := slices.Index(waiters.mutexes, m); i >= 0 {
			waiters.mutexes = slices.Delete(waiters.mutexes, i, i+1)
		}
		if len(waiters.mutexes) == 0 && !waiters.isIdle {
			n.idle.add(waiters)
		}
	}
	for n.idle.count > n.idleLimit {
		oldest := n.idle.first
		n.idle.remove(oldest)
		delete(n.waiters, oldest.channel)
		emptied = append(emptied, oldest.channel)
	}
	n.waiting.Add(-1)
	if !acquired && m.wait.releaseWakes.Load() > 0 {
		if waiters := n.waiters[m.wait.wokenOn]; waiters != nil {
			n.wakeOne(m.wait.wokenOn, waiters, 0)
		}
	}
	m.wait.releaseWakes.Store(0)
	m.wait.subscribing, m.wait.wokenOn, m.wait.pickedFor = false, "", 0
	if len(emptied) > 0 && n.subscriber != nil {
		for _, command := range n.pushCommands(unsubscribe, emptied) {
			n.subscriber.Send(command)
		}
	}
}

// start makes the subscriptions, one connection per node, through which
// the nodes announce releases. It runs with n.mu held.
func (n *notifier) start() {
	c := n.client
	n.waiters = make(map[string]*channelWaiters)
	n.cannot = make([]error, len(c.addresses))
	n.notifying = len(c.addresses)
	options := mux.SubscribeOptions{OnConnect: n.resubscribe, OnPush: n.deliver, OnUnavailable: n.unavailable}
	if c.options.Protocol != ProtocolRESP2 {
		// The same connections watch the keys of the renewed holds.
		options.OnInvalidate, options.OnTrackingUnavailable = c.watcher.invalidated, c.watcher.unavailable
	}
	n.subscriber = c.group.Subscribe(options)
}

// startTracking makes the subscription connections, if no waiter did yet,
// for the watcher to arm keys on.
func (n *notifier) startTracking() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.waiters == nil && !n.client.closed.Load() {
		n.start()
	}
}

// trackingSubscriber returns the subscription connections, or nil before
// they are made.
func (n *notifier) trackingSubscriber() *mux.Subscriber {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.subscriber
}

// deliver handles a push of node's subscription connection: the
// confirmation of a subscription (see confirmed), or the announcement of a
// release, which wakes one waiter of the channel once a quorum of nodes
// has announced it. A message without an identity, from a release script
// that does not publish one, wakes one waiter by itself.
func (n *notifier) deliver(node int, push resp.Value) {
	if len(push.Elems) < 2 {
		return
	}
	kind := string(push.Elems[0].Str)
	switch kind {
	case "message", "subscribe", "smessage", "ssubscribe", "sunsubscribe":
	default:
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	channel := push.Elems[1].Str
	waiters := n.waiters[string(channel)]
	if waiters == nil {
		return
	}
	switch kind {
	case "subscribe", "ssubscribe":
		n.confirmed(node, waiters.channel, waiters)
		return
	case "sunsubscribe":
		n.unsubscribed(node, waiters.channel, waiters)
		return
	}
	if waiters.isIdle {
		// Nobody to wake: a waiter whose attempt began before it and that
		// registers later looks once more.
		waiters.unheard = n.unheard.Add(1)
		return
	}
	var identity, first []byte
	if len(push.Elems) >= 3 {
		identity = push.Elems[2].Str
	}
	if i := bytes.IndexByte(identity, ' '); i >= 0 {
		// A fair lock's release names the first waiter in line.
		identity, first = identity[:i], identity[i+1:]
	}
	if len(identity) > 0 && !waiters.release.announced(identity, n.client.need) {
		return
	}
	if first != nil {
		n.wakeFirstInLine(waiters, first)
		return
	}
	n.wakeOne(waiters.channel, waiters, releaseHash(identity))
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
