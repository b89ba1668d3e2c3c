package redlock

import (
	"context"
	"fmt"

	"github.com/lockmux/lockmux/redlock/internal/round"
)

// Unlock releases the lock on every node. It returns nil only when a quorum
// of nodes confirmed that they released this hold while its validity had
// not ended; otherwise the error matches ErrLockLost: the hold may have
// been taken over by another client. Either way the Mutex is no longer held
// afterwards, its renewal has stopped, and it may be locked again.
func (m *Mutex) Unlock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	return m.release(ctx, currentHold)
}

// release releases the hold of the given generation, or the current one.
func (m *Mutex) release(ctx context.Context, generation uint64) error {
	// The hold ends before the release is sent, and under the same lock as
	// the check: of two Unlocks that race, one ends the hold and the other
	// finds it not held; a renewal in flight finds it gone and schedules
	// nothing more.
	ended, ok := m.endHold(generation)
	if !ok {
		return ErrNotHeld
	}
	defer m.giveTurn()

	c := m.client
	if err := c.usable(); err != nil {
		return err
	}
	r := m.acquisitionRound()
	clock := c.options.clock
	start := clock.Now()
	// A replay carries the same identity, so the nodes announce one
	// release.
	newReleaseIdentity(&r.Identity)
	identity := r.Identity[:]
	m.start(r, round.Release, m.acquisition.token(), 0, identity)
	m.post(r)
	// A waiter of this Client wakes now: its attempt goes behind the
	// release on every node's connection (see docs/waiting.md).
	c.notifier.Released((*waitingLock)(m), identity)
	waitErr := m.gather(ctx, r)
	elapsed := clock.Now().Sub(start)
	m.announceWhereAsked(ctx, r, identity)

	var err error
	unusable := c.usable()
	switch {
	case !start.Before(ended.until):
		err = fmt.Errorf("%w: the validity of %q ended %v before the unlock", ErrLockLost, m.key, start.Sub(ended.until))
	case waitErr != nil:
		err = fmt.Errorf("redlock: unlock %q: %w: the release goes on unconfirmed: %w", m.key, waitErr, quorumError(&r.Tally, m.key, c.addresses, elapsed))
	case r.Tally.Got < c.need:
		err = quorumError(&r.Tally, m.key, c.addresses, elapsed)
	case unusable != nil:
		// A node that connected during the round showed that two
		// addresses reach one server: the count cannot be trusted.
		err = unusable
	}
	c.stats.recordRelease(elapsed, err == nil)
	if observer := c.options.Observer; observer != nil {
		observer.OnRelease(ReleaseEvent{Key: m.key, Got: r.Tally.Got, Need: c.need, Elapsed: elapsed, Held: start.Sub(ended.acquired), Err: err})
	}
	return err
}

// dropEndedHold ends a hold that an attempt won but whose validity ended
// before Lock or TryLock could return it: the attempt failed after all.
// The keys are released on every node, without waiting (the release is
// carried), and the observer is told the hold was lost unless it was
// already. It returns the attempt's error, which matches ErrNotAcquired,
// or nil when another goroutine unlocked the hold first (see
// validAtReturn).
func (m *Mutex) dropEndedHold(generation uint64) error {
	ended, ok := m.endHold(generation)
	if !ok {
		return nil
	}
	c := m.client
	r := m.acquisitionRound()
	m.start(r, round.QuietRelease, m.acquisition.token(), 0, nil)
	m.send(r)
	now := c.options.clock.Now()
	err := fmt.Errorf("%w: the validity of %q ended %v before the hold could be returned", ErrNotAcquired, m.key, now.Sub(ended.until))
	if !ended.lost {
		c.stats.recordLost()
		if observer := c.options.Observer; observer != nil {
			observer.OnLost(LostEvent{Key: m.key, Held: now.Sub(ended.acquired), Err: fmt.Errorf("%w: %w", ErrLockLost, err)})
		}
	}
	return err
}

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
