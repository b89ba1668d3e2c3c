package redlock

import (
	"context"
	"fmt"
)

// ForceRelease deletes the lock key on every node, whoever holds it: an
// administrative release, for a hold whose holder is gone and whose TTL
// is too long to wait for (a key without a TTL, left by another tool, is
// released too). It announces the release, so that waiting Locks try
// again at once. It returns the number of nodes that had the key, and an
// error when some node did not answer: the key may remain there.
//
// What it does to the holder, if one is alive: its hold is gone, but it
// learns so only when it next speaks to the nodes. A renewed hold
// (MutexOptions.AutoExtend) that watches its keys (RESP3) notices at once
// and renews; another renewed hold, at its next renewal; a hold that is
// not renewed, at its Unlock or Extend, which fail with ErrLockLost. Until
// then it believes it holds the lock while another client may take it:
// the exclusion is broken for that time. The release is not atomic across
// the nodes: a renewal that reaches a quorum of nodes before the release
// does keeps the hold, and restores its keys on the nodes that lost them;
// stop a holder that is alive rather than release its lock under it.
// Fences still increase (the counters are kept), so a resource that
// checks them refuses the old holder's writes.
//
// Only the key itself is released: a semaphore's permits
// (NAME:permit:SLOT), a read/write lock's readers (NAME:readers) and a
// fair lock's line are keys of their own.
func (c *Client) ForceRelease(ctx context.Context, key string) (int, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	if key == "" {
		return 0, fmt.Errorf("%w: empty key", ErrInvalidOptions)
	}
	m := newMutex(c, key, MutexOptions{})
	if m.err != nil {
		return 0, m.err
	}
	var identity [releaseIdentityLength]byte
	newReleaseIdentity(&identity)
	r := m.acquisition.round
	m.start(r, nodeForceRelease, identity[:], 0, nil)
	err := m.exchange(ctx, r)
	m.announceWhereAsked(ctx, r, identity[:])
	released, failed := 0, 0
	for _, node := range r.tally.nodes {
		switch {
		case node.outcome == OutcomeConfirmed && node.number == 1:
			released++
		case node.outcome != OutcomeConfirmed:
			failed++
		}
	}
	switch {
	case err != nil:
		return released, fmt.Errorf("redlock: force release of %q: %w", key, err)
	case failed > 0:
		return released, fmt.Errorf("redlock: force release of %q: %w", key, r.tally.quorumError(key, c.addresses, 0))
	}
	return released, nil
}
