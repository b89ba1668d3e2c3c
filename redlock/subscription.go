package redlock

import (
	"errors"
	"fmt"

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
// When too few nodes remain to notify a quorum, it wakes every waiter: from
// now on they retry at the retry delay.
func (n *notifier) unavailable(node int, cause error) {
	c := n.client
	err := fmt.Errorf("%w: %s: %w", ErrNotificationsUnavailable, c.addresses[node], cause)
	var refusal *resp.ServerError
	if errors.As(cause, &refusal) {
		if isConfigErrorCode(refusal.Code()) {
			err = fmt.Errorf("%w: %w", ErrConfig, err)
		}
		err = fmt.Errorf("%w; allow the release channels to the user with the ACL rule %s", err, releaseChannelsRule)
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
				m.wake()
			}
		}
	}
	n.mu.Unlock()
	if observer := c.options.Observer; observer != nil {
		observer.OnNodeError(NodeErrorEvent{Operation: OperationSubscribe, Address: c.addresses[node], Outcome: OutcomeError, Err: err})
	}
}

// resubscribe subscribes node's fresh connection to every channel with
// waiters and wakes those waiters, so that they look at the lock again: a
// release may have been missed while the node was not connected.
func (n *notifier) resubscribe(node int) {
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
	n.subscriber.SendTo(node, command)
}
