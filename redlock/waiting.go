package redlock

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/resp"
)

// releasedChannelPrefix starts the pub/sub channel on which the release
// script announces that a key is free; the key follows it.
const releasedChannelPrefix = "lockmux:released:"

// notificationFallback multiplies the retry delay of a Lock that waits for
// a release notification: it retries on its own only that much later, in
// case a notification was lost (a node restarted, a holder's key expired).
const notificationFallback = 8

// notifier wakes the Mutexes that wait for a lock to be released. It keeps
// one subscription connection per node, shared by every waiter of the
// Client, subscribed to the channels of the keys that somebody waits for
// and to nothing else. The connections and their listening goroutines
// start with the first waiter and end with the Client.
type notifier struct {
	client *Client

	waiting     atomic.Int64 // the number of registered waiters, read without mu
	mu          sync.Mutex
	waiters     map[string]*channelWaiters // channel → who waits on it; kept while somebody does
	subscribers []*conn.Conn               // one per node; nil until the first waiter
	unavailable bool                       // the connections cannot subscribe (RESP2)
	cancel      context.CancelFunc
	goroutines  sync.WaitGroup
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
// available; the caller then retries on its own.
func (n *notifier) register(m *Mutex) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.unavailable || n.client.closed.Load() {
		return false
	}
	if n.subscribers == nil {
		n.start()
	}
	channel := m.releasedChannel()
	waiters := n.waiters[channel]
	if waiters == nil {
		waiters = &channelWaiters{}
		n.waiters[channel] = waiters
		command := resp.AppendCommand(nil, "SUBSCRIBE", channel)
		for _, subscriber := range n.subscribers {
			subscriber.SendPush(command)
		}
	}
	waiters.mutexes = append(waiters.mutexes, m)
	n.waiting.Add(1)
	return true
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
	command := resp.AppendCommand(nil, "UNSUBSCRIBE", channel)
	for _, subscriber := range n.subscribers {
		subscriber.SendPush(command)
	}
}

// start dials the subscription connections and starts one listening
// goroutine per node. It runs with n.mu held.
func (n *notifier) start() {
	c := n.client
	n.waiters = make(map[string]*channelWaiters)
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	for _, address := range c.dialAddresses {
		options := conn.Options{Username: c.options.Username, Password: c.options.Password, TLSConfig: c.options.TLSConfig,
			DialTimeout: c.options.DialTimeout, ClientName: c.options.ClientName}
		options.Protocol = conn.ProtocolRESP3
		options.OnPush = n.deliver
		subscriber, err := conn.New(address, options)
		if err != nil {
			continue // New validated every address already
		}
		n.subscribers = append(n.subscribers, subscriber)
		n.goroutines.Go(func() { n.listen(ctx, subscriber) })
	}
}

// listen keeps one subscription connection up and read until ctx ends.
// After each (re)connection it subscribes again to every channel that has
// waiters, and wakes them: a release may have been missed meanwhile.
func (n *notifier) listen(ctx context.Context, subscriber *conn.Conn) {
	defer subscriber.Close()
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
		if err := subscriber.Connect(ctx); err != nil {
			retry.Reset(n.client.options.RetryDelayMax)
			continue
		}
		if subscriber.Protocol() != conn.ProtocolRESP3 {
			n.mu.Lock()
			n.unavailable = true
			n.mu.Unlock()
			return
		}
		n.resubscribe(subscriber)
		subscriber.Listen(ctx)
		retry.Reset(n.client.options.RetryDelayMin)
	}
}

// resubscribe subscribes a fresh connection to every channel with waiters
// and wakes those waiters, so that they look at the lock again.
func (n *notifier) resubscribe(subscriber *conn.Conn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.waiters) == 0 {
		return
	}
	command := resp.AppendArrayHeader(nil, 1+len(n.waiters))
	command = resp.AppendBulkString(command, "SUBSCRIBE")
	for channel, waiters := range n.waiters {
		command = resp.AppendBulkString(command, channel)
		for _, m := range waiters.mutexes {
			m.wake()
		}
	}
	subscriber.SendPush(command)
}

// deliver handles a push of a subscription connection: the confirmation
// of a subscription wakes the channel's waiters, and a release wakes one
// of them once a quorum of nodes has announced it. A message without a
// token, from a release script that does not publish one, wakes one waiter
// by itself.
func (n *notifier) deliver(push resp.Value) {
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

// close stops the listening goroutines and waits for them.
func (n *notifier) close() {
	n.mu.Lock()
	cancel := n.cancel
	n.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	n.goroutines.Wait()
}
