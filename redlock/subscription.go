package redlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/resp"
)

// The bounds of the backoff between two dials of one subscription
// connection. It doubles after each connection that failed, or did not
// last subscriptionBackoffMax, and starts again from the bottom after one
// that lasted: a node that drops every subscription is dialled a few times
// a second at first, then every subscriptionBackoffMax, never in a loop.
const (
	subscriptionBackoffMin = 50 * time.Millisecond
	subscriptionBackoffMax = 2 * time.Second
)

// releaseChannelsRule is the ACL rule that lets a user publish and
// subscribe to the release channels.
const releaseChannelsRule = "&" + releasedChannelPrefix + "*"

// subscriptionState says whether a node can carry release notifications.
type subscriptionState uint8

const (
	// subscriptionNotifying: the node may notify. Its connection is up,
	// or being dialled.
	subscriptionNotifying subscriptionState = iota
	// subscriptionUnavailable: the node cannot notify, for the life of the
	// Client. It speaks only RESP2, Options.Protocol is ProtocolRESP2, or
	// it refused a subscription.
	subscriptionUnavailable
)

// subscription is one node's subscription connection and what the
// notifier knows of it.
type subscription struct {
	address string     // the node's address, as Client.Addresses gives it
	conn    *conn.Conn // nil when the node was unavailable from the start

	// state and reason are guarded by notifier.mu.
	state  subscriptionState
	reason error // why the node cannot notify; matches ErrNotificationsUnavailable
}

// listen keeps one subscription connection up and read until ctx ends or
// the node turns out unable to notify. After each (re)connection it
// subscribes again to every channel that has waiters, and wakes them: a
// release may have been missed meanwhile. A connection that fails is
// dialled again after a jittered backoff that doubles, up to
// subscriptionBackoffMax.
func (n *notifier) listen(ctx context.Context, s *subscription) {
	defer s.conn.Close()
	retry := time.NewTimer(0)
	defer retry.Stop()
	var backoff time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
		if s.conn.Connect(ctx) == nil {
			if s.conn.Protocol() != conn.ProtocolRESP3 {
				n.unavailable(s, fmt.Errorf("%w: %s speaks only RESP2, and notifications need RESP3 (Redis 6 or later)",
					ErrNotificationsUnavailable, s.address))
				return
			}
			n.resubscribe(s)
			connected := time.Now()
			listening, stop := context.WithCancel(ctx)
			s.conn.ListenPush(listening, func(refusal resp.Value) {
				n.unavailable(s, refusedError(s.address, refusal))
				stop()
			})
			stop()
			if n.isUnavailable(s) {
				return
			}
			if time.Since(connected) >= subscriptionBackoffMax {
				backoff = 0 // the connection lasted: its end is news, not a loop
			}
		}
		backoff = min(max(2*backoff, subscriptionBackoffMin), subscriptionBackoffMax)
		// Full jitter in [backoff/2, backoff] keeps clients out of step.
		retry.Reset(backoff/2 + rand.N(backoff/2+1))
	}
}

// refusedError describes a node's refusal of a subscription: an ACL that
// denies the user the release channels, as Redis 7 does for a new user.
func refusedError(address string, refusal resp.Value) error {
	err := refusal.Err()
	if isConfigErrorCode(string(resp.ErrorCode(refusal.Str))) {
		err = fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return fmt.Errorf("%w: %s refused the subscription to the release channels (%w); allow them to the user with the ACL rule %s",
		ErrNotificationsUnavailable, address, err, releaseChannelsRule)
}

// unavailable marks the node of s as unable to notify, for the life of the
// Client, and tells the observer, once per node. When too few nodes remain
// to notify a quorum, it wakes every waiter: from now on they retry at the
// retry delay.
func (n *notifier) unavailable(s *subscription, reason error) {
	n.mu.Lock()
	first := n.markUnavailableLocked(s, reason)
	n.mu.Unlock()
	if first {
		n.report(s)
	}
}

// markUnavailableLocked is unavailable without the report. It reports
// whether the node was marked now rather than before.
func (n *notifier) markUnavailableLocked(s *subscription, reason error) bool {
	if s.state == subscriptionUnavailable {
		return false
	}
	s.state, s.reason = subscriptionUnavailable, reason
	n.notifying--
	if n.notifying == n.client.need-1 {
		for _, waiters := range n.waiters {
			for _, m := range waiters.mutexes {
				m.wake()
			}
		}
	}
	return true
}

// report tells the observer that the node of s cannot notify.
func (n *notifier) report(s *subscription) {
	observer := n.client.options.Observer
	if observer == nil {
		return
	}
	n.mu.Lock()
	reason := s.reason
	n.mu.Unlock()
	observer.OnNodeError(NodeErrorEvent{Operation: OperationSubscribe, Address: s.address, Outcome: OutcomeError, Err: reason})
}

// isUnavailable reports whether the node of s cannot notify.
func (n *notifier) isUnavailable(s *subscription) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return s.state == subscriptionUnavailable
}

// resubscribe subscribes a fresh connection to every channel with waiters
// and wakes those waiters, so that they look at the lock again.
func (n *notifier) resubscribe(s *subscription) {
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
	s.conn.SendPush(command)
}
