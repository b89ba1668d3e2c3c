package waiting

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/resp"
)

// NotificationFallback multiplies the retry delay of a Lock that waits for
// a release notification: it tries again on its own only that much later,
// in case a release was not announced (a holder whose ACL refuses the
// channel, a holder's key that expired). It applies while a quorum of nodes
// can notify; when too few can, waiters retry at the retry delay.
const NotificationFallback = 8

// Config is what a Notifier needs of its Client.
type Config struct {
	Nodes   int  // the number of nodes
	Need    int  // the quorum
	Sharded bool // the channels are sharded: a node is a Redis Cluster member

	// Closed reports whether the Client is closed; Closing is closed when
	// it is, and ends every wait.
	Closed  func() bool
	Closing <-chan struct{}

	// Subscribe makes the subscription connections, one per node, whose
	// hooks call Deliver, Resubscribe and Unavailable.
	Subscribe func() *mux.Subscriber
}

// Notifier wakes the Waiters of a Client's locks when a lock is released.
// It keeps one subscription connection per node, shared by every waiter,
// from the first waiter to Close. They listen on the channels of the keys
// somebody waits for. A node that cannot notify is marked for good
// (Unavailable). While fewer than a quorum can notify, waiters retry at the
// retry delay. Init readies it; it is safe for concurrent use.
type Notifier struct {
	config Config

	// IdleLimit is the most idle channels kept subscribed: IdleChannelsKept
	// unless changed before the first waiter.
	IdleLimit int

	waiting    atomic.Int64 // the number of registered waiters, read without mu
	mu         sync.Mutex
	waiters    map[string]*channelWaiters // channel → who waits on it, or waited lately; nil until the first waiter
	subscriber *mux.Subscriber            // made with the first waiter
	cannot     []error                    // per node, why it cannot notify; nil while it can
	notifying  int                        // the nodes that can notify

	idle    idleChannels  // the channels nobody waits on, kept subscribed
	unheard atomic.Uint64 // numbers the releases announced on idle channels
}

// Init readies n for the Client that config describes.
func (n *Notifier) Init(config Config) {
	n.config, n.IdleLimit = config, IdleChannelsKept
}

// channelWaiters is what the notifier keeps of a channel while somebody
// waits on it, and while it is idle (see idleChannels).
type channelWaiters struct {
	channel string    // its name, the key of Notifier.waiters
	list    []*Waiter // in the order they began to wait
	release release   // the latest release announced on the channel

	// subscriptions says, per node, where the channel's subscription
	// stands; confirmations counts the nodes where it is confirmed.
	subscriptions []subscriptionState
	confirmations int

	// While nobody waits on it, the channel is in Notifier.idle, and
	// unheard numbers the last release announced on it since.
	idlePrevious, idleNext *channelWaiters
	isIdle                 bool
	unheard                uint64
}

// subscriptionState is where the subscription to one channel stands on one
// node.
type subscriptionState uint8

const (
	subscriptionSent      subscriptionState = iota // sent, or waiting for the connection
	subscriptionConfirmed                          // confirmed by the node
	subscriptionRenewed                            // sent again on a new connection: a release may have gone unheard
)

// register adds w to the waiters of each of its keys and subscribes to the
// channels nobody listened to yet. When a channel of w is not yet
// confirmed by a quorum of nodes, w looks once more when it is (see
// Notifier.confirmed). It reports false when notifications are not
// available: too few nodes can notify a quorum. The caller then retries
// on its own, at the retry delay.
func (n *Notifier) register(w *Waiter) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.waiters == nil && !n.config.Closed() {
		n.start()
	}
	if n.notifying < n.config.Need || n.config.Closed() {
		return false
	}
	var fresh []string
	look := false
	w.subscribing, w.wokenOn, w.pickedFor = false, "", 0
	for _, channel := range w.lock.ReleasedChannels() {
		waiters := n.waiters[channel]
		switch {
		case waiters == nil:
			waiters = &channelWaiters{channel: channel, subscriptions: make([]subscriptionState, len(n.cannot))}
			n.waiters[channel] = waiters
			fresh = append(fresh, channel)
		case waiters.isIdle:
			// Subscribed already: a release announced since w's last
			// attempt began woke nobody, and w looks once more.
			n.idle.remove(waiters)
			look = look || waiters.unheard > w.unheardBefore
		}
		if waiters.confirmations < n.config.Need {
			w.subscribing = true
		}
		waiters.list = append(waiters.list, w)
	}
	if look {
		w.wake(causeLook)
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
// for release notifications: NotificationFallback while a quorum of nodes
// can notify, otherwise 1.
func (n *Notifier) fallback() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.notifying < n.config.Need {
		return 1
	}
	return NotificationFallback
}

// unregister removes w from the waiters of its keys. The channels nobody
// waits on any more stay subscribed for the next waiter, idle; beyond
// IdleLimit of them, the oldest are unsubscribed. A waiter that leaves
// without the lock after it was picked for a release, and made no attempt
// since (its context ended), passes the wake-up on.
func (n *Notifier) unregister(w *Waiter, acquired bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var emptied []string
	for _, channel := range w.lock.ReleasedChannels() {
		waiters := n.waiters[channel]
		if waiters == nil {
			continue
		}
		if i := slices.Index(waiters.list, w); i >= 0 {
			waiters.list = slices.Delete(waiters.list, i, i+1)
		}
		if len(waiters.list) == 0 && !waiters.isIdle {
			n.idle.add(waiters)
		}
	}
	for n.idle.count > n.IdleLimit {
		oldest := n.idle.first
		n.idle.remove(oldest)
		delete(n.waiters, oldest.channel)
		emptied = append(emptied, oldest.channel)
	}
	n.waiting.Add(-1)
	if !acquired && w.releaseWakes.Load() > 0 {
		if waiters := n.waiters[w.wokenOn]; waiters != nil {
			n.wakeOne(w.wokenOn, waiters, 0)
		}
	}
	w.releaseWakes.Store(0)
	w.subscribing, w.wokenOn, w.pickedFor = false, "", 0
	if len(emptied) > 0 && n.subscriber != nil {
		for _, command := range n.pushCommands(unsubscribe, emptied) {
			n.subscriber.Send(command)
		}
	}
}

// start makes the subscriptions, one connection per node, through which
// the nodes announce releases. It runs with n.mu held.
func (n *Notifier) start() {
	n.waiters = make(map[string]*channelWaiters)
	n.cannot = make([]error, n.config.Nodes)
	n.notifying = n.config.Nodes
	n.subscriber = n.config.Subscribe()
}

// StartTracking makes the subscription connections, if no waiter did yet,
// for the watcher to arm keys on.
func (n *Notifier) StartTracking() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.waiters == nil && !n.config.Closed() {
		n.start()
	}
}

// TrackingSubscriber returns the subscription connections, or nil before
// they are made.
func (n *Notifier) TrackingSubscriber() *mux.Subscriber {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.subscriber
}

// Deliver handles a push of node's subscription connection: the
// confirmation of a subscription (see confirmed), or the announcement of a
// release, which wakes one waiter of the channel once a quorum of nodes
// has announced it. A message without an identity, from a release script
// that does not publish one, wakes one waiter by itself.
func (n *Notifier) Deliver(node int, push resp.Value) {
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
	if len(identity) > 0 && !waiters.release.announced(identity, n.config.Need) {
		return
	}
	if first != nil {
		n.wakeFirstInLine(waiters, first)
		return
	}
	n.wakeOne(waiters.channel, waiters, releaseHash(identity))
}

// Close closes the subscriptions and waits for their goroutines.
func (n *Notifier) Close() {
	n.mu.Lock()
	subscriber := n.subscriber
	n.mu.Unlock()
	if subscriber != nil {
		subscriber.Close()
	}
}

// Unheard numbers the releases announced so far on idle channels, which
// woke nobody (see Waiter.AttemptBegan).
func (n *Notifier) Unheard() uint64 { return n.unheard.Load() }
