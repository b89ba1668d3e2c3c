package redlock

import (
	"context"
	"fmt"

	"github.com/lockmux/lockmux/redlock/internal/round"
)

// ForceRelease deletes the lock key on every node, whoever holds it, and
// wakes waiting Locks; fencing counters stay (docs/operations.md). It
// returns how many nodes had the key, and an error when a node did not
// answer: the key may remain there.
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
	m.start(r, round.ForceRelease, identity[:], 0, nil)
	err := m.exchange(ctx, r)
	m.announceWhereAsked(ctx, r, identity[:])
	released, failed := 0, 0
	for _, node := range r.Tally.Nodes {
		switch {
		case node.Outcome == round.OutcomeConfirmed && node.Number == 1:
			released++
		case node.Outcome != round.OutcomeConfirmed:
			failed++
		}
	}
	switch {
	case err != nil:
		return released, fmt.Errorf("redlock: force release of %q: %w", key, err)
	case failed > 0:
		return released, fmt.Errorf("redlock: force release of %q: %w", key, quorumError(&r.Tally, key, c.addresses, 0))
	}
	return released, nil
}
