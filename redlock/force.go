package redlock

import (
	"context"
	"fmt"
)

// ForceRelease deletes the lock key on every node, whoever holds it, and
// announces the release to waiting Locks. It is for a holder that is gone
// and a TTL too long to wait for; a key without a TTL is released too.
// It returns the number of nodes that had the key, and an error when a
// node did not answer: the key may remain there. A live holder learns of
// it only when it next speaks to the nodes: see docs/operations.md. The
// fencing counters are kept. Only the key itself is released: a
// semaphore's permits, a read/write lock's readers and a fair line are not.
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
	r := m.acquisitionRound()
	defer m.giveBackRounds()
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
