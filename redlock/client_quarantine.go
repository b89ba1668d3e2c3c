package redlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/redlock/internal/round"
)

// epochKey is the key of a node's epoch marker, which the doctor shares.
const epochKey = quarantine.EpochKey

// newQuarantine returns a quarantine of c's nodes; with watch, it arms
// the markers on RESP3 subscription connections.
func (c *Client) newQuarantine(watch bool) *quarantine.Quarantine {
	config := quarantine.Config{
		Group: c.group, Nodes: len(c.dialAddresses), Need: c.need, Clock: c.options.clock,
		Threshold:   c.options.MaxTTL + round.Drift(c.options.MaxTTL, c.options.DriftFactor),
		DialTimeout: c.options.DialTimeout, NodeTimeout: c.options.NodeTimeout,
		Quarantined: ErrQuarantined, Unreachable: ErrNodeUnreachable, UnexpectedReply: errUnexpectedReply,
	}
	if watch && c.options.Protocol != ProtocolRESP2 {
		config.Arm = c.watcher.armMarker
	}
	return quarantine.New(config)
}

// armMarker runs arm on a watcher goroutine, unless the Client is closing.
func (w *watcher) armMarker(arm func(ctx context.Context, subscriber *mux.Subscriber)) {
	c := w.client
	c.notifier.StartTracking()
	w.Go(func() {
		subscriber := c.notifier.TrackingSubscriber()
		if subscriber == nil {
			return
		}
		arm(w.Context(), subscriber)
	})
}

// TrustNodes states that the nodes are new, or kept every key they ever
// held, so the quarantine lets them vote at once. A false statement breaks
// the exclusion (docs/operations.md). It returns an error naming the nodes
// not reached.
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
