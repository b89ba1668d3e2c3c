package redlock

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/resp"
)

// releaseChannelsRule is the ACL rule that lets a user publish and
// subscribe to the release channels, defined in naming, which the doctor
// shares.
const releaseChannelsRule = naming.ReleaseChannelsRule

// unavailable marks a node as unable to notify, for the life of the
// Client, and tells the observer, once per node: it speaks only RESP2,
// Options.Protocol is ProtocolRESP2, or its ACL refused the release
// channels (the mux.Subscriber finds out, and reports each node once).
// When too few nodes remain to notify a quorum, it tells every waiter: from
// now on they retry at the retry delay, the wait under way included.
func (n *notifier) unavailable(node int, cause error) {
	c := n.client
	err := fmt.Errorf("%w: %s: %w", ErrNotificationsUnavailable, c.addresses[node], cause)
	var refusal *resp.ServerError
	if errors.As(cause, &refusal) {
		if isConfigError(refusal.Message) {
			err = fmt.Errorf("%w: %w", ErrConfig, err)
		}
		err = fmt.Errorf("%w; allow the release channels to the user with the ACL rule %sPATTERN, with the pattern of the lock keys (%s for every key)",
			err, naming.ReleasedChannelPrefix, releaseChannelsRule)
	}
	n.mu.Lock()
	if n.cannot[node] != nil {
		n.mu.Unlock()
		return
	}
	n.cannot[node] = err
	n.notifying--
	if n.notifying == c.need-1 {
		for _, waiters := range n.waiters {
			for _, m := range waiters.mutexes {
				m.wake(causeShorten)
			}
		}
	}
	n.mu.Unlock()
	if observer := c.options.Observer; observer != nil {
		observer.OnNodeError(NodeErrorEvent{Operation: OperationSubscribe, Address: c.addresses[node], Outcome: OutcomeError, Err: err})
	}
}

// resubscribe subscribes node's fresh connection to every channel with
// waiters. Where the node had confirmed a subscription on its former
// connection, a release may have gone unheard in between: its new
// confirmation wakes a waiter (see confirmed).
func (n *notifier) resubscribe(node int) {
	n.client.watcher.reconnected(node)
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
func (n *notifier) unsubscribed(node int, channel string, waiters *channelWaiters) {
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
// When it makes a quorum, the waiters that wait for it look once more, if
// a quorum confirmed every one of their channels: a release between their
// failed attempt and their subscription would have gone unheard. A later
// first confirmation ends the wait of those whose last attempt was a
// split vote (causeConfirmedLate): a release may have reached this node
// before its subscription and the others after that attempt, so that the
// nodes that announce it make no quorum. After an attempt that every node
// refused, the release comes later everywhere, and the quorum hears it. A
// confirmation after a reconnection wakes one waiter, as a release does:
// one may have gone unheard. The caller holds n.mu.
func (n *notifier) confirmed(node int, channel string, waiters *channelWaiters) {
	if node >= len(waiters.subscriptions) || waiters.subscriptions[node] == subscriptionConfirmed {
		return
	}
	renewed := waiters.subscriptions[node] == subscriptionRenewed
	waiters.subscriptions[node] = subscriptionConfirmed
	waiters.confirmations++
	switch {
	case waiters.confirmations == n.client.need:
		for _, m := range waiters.mutexes {
			if m.wait.subscribing && n.quorumConfirmed(m) {
				m.wait.subscribing = false
				m.wake(causeLook)
			}
		}
	case waiters.confirmations > n.client.need && !renewed:
		for _, m := range waiters.mutexes {
			if n.quorumConfirmed(m) {
				m.wake(causeConfirmedLate)
			}
		}
	}
	if renewed {
		n.wakeOne(channel, waiters, 0)
	}
}

// quorumConfirmed reports whether a quorum of nodes confirmed the
// subscription to every channel of m. The caller holds n.mu.
func (n *notifier) quorumConfirmed(m *Mutex) bool {
	for _, channel := range m.releasedChannels() {
		if waiters := n.waiters[channel]; waiters == nil || waiters.confirmations < n.client.need {
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
// unsubscribe from them: SUBSCRIBE or UNSUBSCRIBE, one command; on a
// Client with a Redis Cluster member, whose announcements are sharded
// (see Client.releasedChannelPrefix), SSUBSCRIBE or SUNSUBSCRIBE, one
// command per hash slot, as a cluster's master takes them.
func (n *notifier) pushCommands(kind pushKind, channels []string) [][]byte {
	name := "SUBSCRIBE"
	if kind == unsubscribe {
		name = "UNSUBSCRIBE"
	}
	if !n.client.hasCluster {
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
