package waiting

import (
	"maps"
	"slices"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/resp"
)

// Unavailable marks a node as unable to notify, for the life of the
// Client, for the reason err: it speaks only RESP2, or its ACL refused the
// release channels. When too few nodes remain to notify a quorum, every
// waiter retries at the retry delay from now on, the wait under way
// included. It reports false when the node was marked already.
func (n *Notifier) Unavailable(node int, err error) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cannot[node] != nil {
		return false
	}
	n.cannot[node] = err
	n.notifying--
	if n.notifying == n.config.Need-1 {
		for _, waiters := range n.waiters {
			for _, w := range waiters.list {
				w.wake(causeShorten)
			}
		}
	}
	return true
}

// Resubscribe subscribes node's fresh connection to every channel with
// waiters. Where the node had confirmed a subscription on its former
// connection, a release may have gone unheard in between: its new
// confirmation wakes a waiter (see confirmed).
func (n *Notifier) Resubscribe(node int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.waiters) == 0 {
		return
	}
	channels := make([]string, 0, len(n.waiters))
	for channel, waiters := range n.waiters {
		channels = append(channels, channel)
		if node < len(waiters.subscriptions) && waiters.subscriptions[node] == subscriptionConfirmed {
			waiters.subscriptions[node] = subscriptionRenewed
			waiters.confirmations--
		}
	}
	for _, command := range n.pushCommands(subscribe, channels) {
		n.subscriber.SendTo(node, command)
	}
}

// unsubscribed takes node's end of a sharded subscription to channel that
// waiters still need: a master of a Redis Cluster ends the subscriptions
// to a slot's channels when the slot leaves it (a resharding, a
// failover), and the subscription is made again, on the master the slot
// map names (the Subscriber follows a MOVED). A release may go unheard in
// between: the new confirmation wakes a waiter, as after a reconnection.
// The end of a subscription this Client asked for, of a channel that
// found waiters again since, makes one more SSUBSCRIBE, which does no
// harm. The caller holds n.mu.
func (n *Notifier) unsubscribed(node int, channel string, waiters *channelWaiters) {
	if node >= len(waiters.subscriptions) || n.subscriber == nil {
		return
	}
	if waiters.subscriptions[node] == subscriptionConfirmed {
		waiters.subscriptions[node] = subscriptionRenewed
		waiters.confirmations--
	}
	for _, command := range n.pushCommands(subscribe, []string{channel}) {
		n.subscriber.SendTo(node, command)
	}
}

// confirmed counts node's confirmation of the subscription to channel.
// The confirmation that makes a quorum makes its waiters look once, when
// a quorum confirmed all their channels. A later one ends the wait after
// a split vote (causeConfirmedLate). One on a new connection wakes a
// waiter, as a release does. The caller holds n.mu.
func (n *Notifier) confirmed(node int, channel string, waiters *channelWaiters) {
	if node >= len(waiters.subscriptions) || waiters.subscriptions[node] == subscriptionConfirmed {
		return
	}
	renewed := waiters.subscriptions[node] == subscriptionRenewed
	waiters.subscriptions[node] = subscriptionConfirmed
	waiters.confirmations++
	switch {
	case waiters.confirmations == n.config.Need:
		for _, w := range waiters.list {
			if w.subscribing && n.quorumConfirmed(w) {
				w.subscribing = false
				w.wake(causeLook)
			}
		}
	case waiters.confirmations > n.config.Need && !renewed:
		for _, w := range waiters.list {
			if n.quorumConfirmed(w) {
				w.wake(causeConfirmedLate)
			}
		}
	}
	if renewed {
		n.wakeOne(channel, waiters, 0)
	}
}

// quorumConfirmed reports whether a quorum of nodes confirmed the
// subscription to every channel of w. The caller holds n.mu.
func (n *Notifier) quorumConfirmed(w *Waiter) bool {
	for _, channel := range w.lock.ReleasedChannels() {
		if waiters := n.waiters[channel]; waiters == nil || waiters.confirmations < n.config.Need {
			return false
		}
	}
	return true
}

// pushKind says whether a push command subscribes or unsubscribes.
type pushKind bool

const (
	subscribe   pushKind = true
	unsubscribe pushKind = false
)

// pushCommands returns the commands that subscribe to channels, or
// unsubscribe from them: SUBSCRIBE or UNSUBSCRIBE, one command; when the
// announcements are sharded (Config.Sharded), SSUBSCRIBE or SUNSUBSCRIBE,
// one command per hash slot, as a cluster's master takes them.
func (n *Notifier) pushCommands(kind pushKind, channels []string) [][]byte {
	name := "SUBSCRIBE"
	if kind == unsubscribe {
		name = "UNSUBSCRIBE"
	}
	if !n.config.Sharded {
		return [][]byte{pushCommand(name, channels)}
	}
	bySlot := make(map[int][]string)
	for _, channel := range channels {
		slot := mux.Slot(channel)
		bySlot[slot] = append(bySlot[slot], channel)
	}
	commands := make([][]byte, 0, len(bySlot))
	for _, slot := range slices.Sorted(maps.Keys(bySlot)) {
		commands = append(commands, pushCommand("S"+name, bySlot[slot]))
	}
	return commands
}

// pushCommand returns the command name over channels.
func pushCommand(name string, channels []string) []byte {
	command := resp.AppendArrayHeader(nil, 1+len(channels))
	command = resp.AppendBulkString(command, name)
	for _, channel := range channels {
		command = resp.AppendBulkString(command, channel)
	}
	return command
}
