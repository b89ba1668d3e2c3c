package redlock

import (
	"context"
	"errors"
	"fmt"
)

// tryAcquire is TryAcquire, which also reports, when it failed, whether
// every slot was found held: by a quorum of nodes, or by another goroutine
// of this process. Only then will a release be announced.
//
// It starts with the slot after the one the last acquisition of this
// Semaphore won. While the Semaphore is not crowded, that slot alone is
// tried, as a Mutex's TryLock does: a plain SET, the cheapest command.
// Once that fails, it is crowded, and each attempt is one round over
// every slot no other goroutine of this process holds or is acquiring
// (attemptOneOf), a script, until one wins the first slot it tries. With
// MutexOptions.Fencing, each is followed by the round that commits the
// fence, as for a Mutex. An Acquire that waits passes kept: a failure
// that retrying may fix then goes into it (errFailureKept).
func (s *Semaphore) tryAcquire(ctx context.Context, kept *keptFailure) (Permit, bool, error) {
	first := int(s.next.Load()) % len(s.slots)
	if !s.crowded.Load() {
		permit, _, err := s.trySlot(ctx, first, kept)
		if err == nil || ctx.Err() != nil || !errors.Is(err, ErrNotAcquired) {
			return permit, false, err
		}
		s.crowded.Store(true)
	}
	candidates := s.scratch.Get().(*permitCandidates)
	defer s.scratch.Put(candidates)
	candidates.take(s, first)
	if len(candidates.mutexes) == 0 {
		return Permit{}, true, s.fail(ctx, errHeldLocally, kept)
	}
	carrier := candidates.mutexes[0]
	won, elapsed, generation, err := carrier.attemptOneOf(ctx, candidates.mutexes, candidates.keys, candidates.fences)
	full, split := false, -1
	if err == errAttemptFailed {
		// The tally is the carrier's until its turn is given back.
		tally := &carrier.acquisitionRound().Tally
		if kept != nil {
			kept.keep(carrier, elapsed)
			err = errFailureKept
		} else {
			err = quorumError(tally, carrier.key, carrier.client.addresses, elapsed)
		}
		full = tally.Held() >= tally.Need
		if likeliest := tally.Likeliest(); likeliest >= 0 && tally.Chosen() < 0 {
			split = candidates.slots[likeliest]
		}
	}
	slot := -1
	for i, m := range candidates.mutexes {
		if m == won {
			slot = candidates.slots[i]
			continue
		}
		m.giveTurn()
	}
	if won == nil && split >= 0 {
		// The nodes chose different slots, as they do when they disagree
		// on which are held: one more round, on the slot most likely free
		// on a quorum of them. The keys the first round set were released
		// before it, in the same order on every node.
		return s.trySlot(ctx, split, kept)
	}
	if won == nil {
		return Permit{}, full, s.fail(ctx, err, kept)
	}
	s.crowded.Store(slot != first)
	generation, err = won.tried(elapsed, generation, nil, kept)
	return s.permit(ctx, slot, generation, err, kept)
}

// trySlot makes one attempt on one slot, as a Mutex's TryLock does.
func (s *Semaphore) trySlot(ctx context.Context, slot int, kept *keptFailure) (Permit, bool, error) {
	generation, err := s.slots[slot].tryLock(ctx, kept)
	return s.permit(ctx, slot, generation, err, kept)
}

// permit returns the permit of slot that an attempt won with generation,
// or the attempt's error err.
func (s *Semaphore) permit(ctx context.Context, slot int, generation uint64, err error, kept *keptFailure) (Permit, bool, error) {
	switch {
	case err != nil:
		return Permit{}, false, s.fail(ctx, err, kept)
	case generation == 0:
		// Unlocked by another goroutine before it could be returned: a
		// slot's Mutex is unlocked only through its permits, which nobody
		// else has. Not reached.
		return Permit{}, false, s.fail(ctx, errReleasedBeforeReturn, kept)
	}
	s.next.Store(uint32(slot + 1))
	return Permit{mutex: s.slots[slot], slot: slot, generation: generation}, false, nil
}

// errReleasedBeforeReturn is the failure of an acquisition of a permit
// whose hold was released before it could be returned.
var errReleasedBeforeReturn = fmt.Errorf("%w: the permit was released before it could be returned", ErrNotAcquired)

// permitCandidates is the scratch of one tryAcquire: the slots it tries,
// in order, whose turns it has, their Mutexes and their keys.
type permitCandidates struct {
	slots   []int
	mutexes []*Mutex
	keys    []string
	fences  []string // the keys' counters, with fencing
}

// take takes the turn of every slot of s that no other goroutine of this
// process has, from slot first on, and lists them.
func (p *permitCandidates) take(s *Semaphore, first int) {
	p.slots, p.mutexes, p.keys, p.fences = p.slots[:0], p.mutexes[:0], p.keys[:0], p.fences[:0]
	for i := range s.slots {
		slot := (first + i) % len(s.slots)
		m := s.slots[slot]
		if m.turn.TryTake() {
			p.slots, p.mutexes, p.keys = append(p.slots, slot), append(p.mutexes, m), append(p.keys, m.key)
			if m.fencing {
				p.fences = append(p.fences, m.fenceKeys()[0])
			}
		}
	}
}

// fail returns the error of a tryAcquire whose attempt failed with err,
// which may be errFailureKept: when kept is given, the caller's context
// has not ended and retrying may fix it, errFailureKept, the failure in
// kept (see noneAcquired); otherwise the error failed makes.
func (s *Semaphore) fail(ctx context.Context, err error, kept *keptFailure) error {
	if kept == nil || ctx.Err() != nil || !errors.Is(err, ErrNotAcquired) {
		if err == errFailureKept {
			err = kept.err(s.slots[0].client.addresses)
		}
		return s.failed(ctx, err)
	}
	if err != errFailureKept {
		kept.cause = err
	}
	return errFailureKept
}

// failed returns the error of a tryAcquire whose attempt failed with err:
// the caller's context's first when it ended, err itself when retrying
// cannot fix it, otherwise err said of the whole semaphore.
func (s *Semaphore) failed(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil && !errors.Is(err, context.Cause(ctx)):
		return fmt.Errorf("redlock: semaphore %q: %w: %w", s.name, context.Cause(ctx), err)
	case !errors.Is(err, ErrNotAcquired) || ctx.Err() != nil:
		return err
	}
	return s.noneAcquired(err)
}

// noneAcquired returns err, an attempt's failure that retrying may fix,
// said of the whole semaphore.
func (s *Semaphore) noneAcquired(err error) error {
	return fmt.Errorf("redlock: semaphore %q: none of its %d permits acquired: %w", s.name, len(s.slots), err)
}

// keptError returns err, the error of a tryAcquireAll given kept, or the
// failure kept when it is errFailureKept.
func (s *Semaphore) keptError(err error, kept *keptFailure) error {
	if err != errFailureKept {
		return err
	}
	return s.noneAcquired(kept.err(s.slots[0].client.addresses))
}
