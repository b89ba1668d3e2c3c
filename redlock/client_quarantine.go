package redlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
)

// epochKey is the key of a node's epoch marker, which the doctor shares.
const epochKey = quarantine.EpochKey

// newQuarantine returns a quarantine of c's nodes (Options.Quarantine).
// With watch, it arms the markers on the subscription connections when
// the nodes may speak RESP3.
func (c *Client) newQuarantine(watch bool) *quarantine.Quarantine {
	config := quarantine.Config{
		Group: c.group, Nodes: len(c.dialAddresses), Need: c.need, Clock: c.options.clock,
		Threshold:   c.options.MaxTTL + drift(c.options.MaxTTL, c.options.DriftFactor),
		DialTimeout: c.options.DialTimeout, NodeTimeout: c.options.NodeTimeout,
		Quarantined: ErrQuarantined, Unreachable: ErrNodeUnreachable, UnexpectedReply: errUnexpectedReply,
	}
	if watch && c.options.Protocol != ProtocolRESP2 {
		config.Arm = c.watcher.armMarker
	}
	return quarantine.New(config)
}

// armMarker runs arm, a quarantine's arming of a node's epoch marker, on a
// goroutine of the watcher's, unless the Client is closing.
func (w *watcher) armMarker(arm func(ctx context.Context, subscriber *mux.Subscriber)) {
	c := w.client
	c.notifier.StartTracking()
	w.armingMu.Lock()
	defer w.armingMu.Unlock()
	if w.ctx.Err() != nil {
		return
	}
	w.arming.Go(func() {
		subscriber := c.notifier.TrackingSubscriber()
		if subscriber == nil {
			return
		}
		arm(w.ctx, subscriber)
	})
}

// TrustNodes states that the nodes are new, or kept every key they ever
// held: servers started empty for this Client, never used by a lock
// before. It writes each node's epoch marker as if it were as old as the
// node, so that Options.Quarantine does not keep them out of the locks.
// It is the operator's statement, and a false one breaks the exclusion: a
// node that lost keys of live holds, trusted, can give the same lock to a
// second client. The next restart, failover or flush of a node is
// quarantined again. It returns an error naming the nodes that could not
// be reached.
func (c *Client) TrustNodes(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	q := c.quarantine
	if q == nil {
		q = c.newQuarantine(false) // the markers are written all the same, for Clients that quarantine
	}
	var failures []error
	for node, err := range q.Trust(ctx) {
		if err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", c.addresses[node], err))
		}
	}
	return errors.Join(failures...)
}
