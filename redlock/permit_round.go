package redlock

import (
	"context"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/round"
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
	if m.options.Fencing {
		command = round.AcquirePermitFenced
	}
	m.start(r, command, a.token(), m.options.TTL.Milliseconds(), nil)
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
		if m.options.Fencing {
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
	remaining := round.Validity(m.options.TTL, elapsed, c.options.DriftFactor)
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
