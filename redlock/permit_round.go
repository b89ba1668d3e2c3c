package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/redlock/internal/round"
	"github.com/lockmux/lockmux/resp"
)

// attemptOneOf acquires whichever candidate a quorum grants, in one round:
// each node sets the first free key. The caller has every candidate's
// turn; m, the first, carries the round. It returns the candidate won and
// its generation, or nil with errAttemptFailed (details in m's tally) or
// an error retrying cannot fix. Stray keys are released without waiting.
func (m *Mutex) attemptOneOf(ctx context.Context, candidates []*Mutex, keys, fences []string) (*Mutex, time.Duration, uint64, error) {
	c := m.client
	a := &m.acquisition
	begun, err := m.begin(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	clock := c.options.clock
	start := clock.Now()
	if c.quarantine != nil {
		start = begun
	}
	// The candidates are the lent round's: once won holds its slot, they
	// may be another Mutex's.
	r := m.acquisitionRound()
	r.Candidates, r.CandidateFences = keys, fences
	command := round.AcquirePermit
	if m.fencing {
		command = round.AcquirePermitFenced
	}
	m.start(r, command, a.token(), m.ttl.Milliseconds(), nil)
	waitErr := m.exchange(ctx, r)
	tally := &r.Tally
	chosen := tally.Chosen()
	if waitErr != nil {
		chosen = round.NoChoice
	}
	m.releaseCandidates(keys, chosen)
	r.Candidates, r.CandidateFences = nil, nil
	var won *Mutex
	var fence int64
	committed := true
	if chosen != round.NoChoice {
		won = candidates[chosen]
		won.adopt(tally, chosen, a.token())
		if m.fencing {
			if fence, committed = won.commitFence(ctx); !committed {
				// The attempt failed at the commit: its error, from the
				// carrier's tally, reports that.
				own := &won.acquisitionRound().Tally
				own.TakeCommit(&won.commitRound().Tally)
				if won != m {
					copy(tally.Nodes, own.Nodes)
					tally.Recount()
				}
			}
		}
	}
	end := clock.Now()
	elapsed := end.Sub(start)
	remaining := round.Validity(m.ttl, elapsed, c.options.DriftFactor)
	unusable := c.usable()
	acquired := won != nil && committed && remaining > 0 && unusable == nil
	c.stats.recordAcquire(elapsed, acquired)
	if acquired {
		return won, elapsed, won.startAcquiredHold(start, end, remaining, fence, &won.acquisitionRound().Tally, 1), nil
	}
	if won != nil {
		won.releaseAfterFailure()
	}
	if unusable != nil {
		return nil, elapsed, 0, unusable
	}
	_, _, err = m.attemptFailed(ctx, 1, elapsed)
	return nil, elapsed, 0, err
}

// adopt makes attemptOneOf's round the won Mutex's own; nodes that
// confirmed another candidate count as refusals. The caller has the turn.
func (m *Mutex) adopt(tally *round.Tally, chosen int64, token []byte) {
	a := &m.acquisition
	own := &m.acquisitionRound().Tally
	if own != tally {
		own.Command, own.Need = tally.Command, tally.Need
		copy(own.Nodes, tally.Nodes)
		a.value = append(a.value[:0], token...)
	}
	for i, node := range own.Nodes {
		if node.Outcome == round.OutcomeConfirmed && node.Choice != chosen {
			own.Nodes[i].Outcome = round.OutcomeHeld
		}
	}
	own.Recount()
}

// releaseCandidates releases every key but the one at chosen (round.NoChoice for
// none) on the nodes that may have set one, without waiting. It removes
// the kept key from keys.
func (m *Mutex) releaseCandidates(keys []string, chosen int64) {
	if chosen != round.NoChoice {
		keys = append(keys[:chosen], keys[chosen+1:]...)
	}
	if len(keys) == 0 {
		return
	}
	m.acquisitionRound().Candidates = keys
	m.releaseSet(round.QuietReleasePermits, chosen)
}

// permitsFreeLua reads which slots of a Semaphore are free on a node.
var permitsFreeLua = protocol.PermitsFree

// Available returns how many permits are free on a quorum of nodes now,
// in one round that writes nothing; quarantined nodes do not count. It
// fails with ErrQuorumUnreachable when too few nodes answered, or with
// ctx's error.
func (s *Semaphore) Available(ctx context.Context) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	c := s.waiter.client
	if err := c.usable(); err != nil {
		return 0, err
	}
	if c.quarantine != nil {
		c.quarantine.Verify(ctx)
	}
	round := c.group.NewRound()
	round.SetScript(permitsFreeLua, len(s.slots), 0)
	for _, slot := range s.slots {
		round.AppendString(slot.key)
	}
	count := &freeSlots{free: make([]int, len(s.slots)), quarantine: c.quarantine, addresses: c.addresses}
	c.group.Send(round, c.roundDeadline())
	if err := c.group.Wait(ctx, round, count); err != nil {
		return 0, fmt.Errorf("redlock: semaphore %q: %w", s.name, context.Cause(ctx))
	}
	if count.answered < c.need {
		return 0, fmt.Errorf("redlock: semaphore %q: %d of %d nodes answered, need %d: %w: %w",
			s.name, count.answered, len(c.addresses), c.need, ErrQuorumUnreachable, errors.Join(count.errs...))
	}
	available := 0
	for _, nodes := range count.free {
		if nodes >= c.need {
			available++
		}
	}
	return available, nil
}

// freeSlots counts, per slot, the nodes where it is free.
type freeSlots struct {
	free       []int
	answered   int
	errs       []error
	quarantine *quarantine.Quarantine
	addresses  []string
}

// Count implements mux.Tally. It waits for every node.
func (f *freeSlots) Count(node int, round *mux.Round) bool {
	reply := round.Reply(node)
	switch {
	case round.Err(node) != nil:
		f.errs = append(f.errs, fmt.Errorf("%s: %w: %w", f.addresses[node], ErrNodeUnreachable, round.Err(node)))
		return false
	case reply.IsError():
		f.errs = append(f.errs, fmt.Errorf("%s: %w", f.addresses[node], reply.Err()))
		return false
	case reply.Type != resp.TypeBulkString || len(reply.Str) != len(f.free) || !onlyZerosAndOnes(reply.Str):
		f.errs = append(f.errs, fmt.Errorf("%s: %w to a read of the slots: %s", f.addresses[node], errUnexpectedReply, reply))
		return false
	}
	if f.quarantine != nil {
		if excluded, left := f.quarantine.Excludes(node, round.Server(node)); excluded {
			f.errs = append(f.errs, fmt.Errorf("%s: %w", f.addresses[node], f.quarantine.Err(node, left)))
			return false
		}
	}
	for slot, held := range reply.Str {
		if held == '0' {
			f.free[slot]++
		}
	}
	f.answered++
	return false
}

// onlyZerosAndOnes reports whether text holds only '0' and '1'.
func onlyZerosAndOnes(text []byte) bool {
	for _, character := range text {
		if character != '0' && character != '1' {
			return false
		}
	}
	return true
}
