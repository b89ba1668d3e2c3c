package redlock

import (
	"context"
	"time"
)

// attemptOneOf runs one acquisition of whichever of the candidates a
// quorum of nodes grants, in one round: each node sets the first of the
// candidates' keys that is free there (acquirePermitScript); with
// fencing, it reads that key's counter too, and the fence is committed in
// a second round, as a Mutex's is. The caller has the turn of every
// candidate; m, the first, carries the round, whose keys are keys (and
// fences, the counters' keys, with fencing). It returns the candidate
// won, held, with the hold's generation, which the caller checks as
// tryLock does (see Mutex.tried); or nil, with errAttemptFailed and the
// details in m's acquisition round's tally, or an error retrying cannot
// fix. Either way the keys set on the nodes that did not confirm the
// candidate won, or confirmed another, are released in the same go,
// without waiting for the replies.
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
	// The candidates are the lent rounds': once won holds its slot, they
	// may be another Mutex's.
	lent := m.lentRounds()
	lent.candidates, lent.candidateFences = keys, fences
	command := nodeAcquirePermit
	if m.options.Fencing {
		command = nodeAcquirePermitFenced
	}
	r := m.acquisitionRound()
	m.start(r, command, a.token(), m.options.TTL.Milliseconds(), nil)
	waitErr := m.exchange(ctx, r)
	tally := &r.tally
	chosen := tally.chosen()
	if waitErr != nil {
		chosen = noChoice
	}
	m.releaseCandidates(keys, chosen)
	lent.candidates, lent.candidateFences = nil, nil
	var won *Mutex
	var fence int64
	committed := true
	if chosen != noChoice {
		won = candidates[chosen]
		won.adopt(tally, chosen, a.token())
		if m.options.Fencing {
			if fence, committed = won.commitFence(ctx); !committed {
				// The attempt failed at the commit: its error, from the
				// carrier's tally, reports that.
				own := &won.acquisitionRound().tally
				own.takeCommit(&won.commitRound().tally)
				if won != m {
					copy(tally.nodes, own.nodes)
					tally.recount()
				}
			}
		}
	}
	end := clock.Now()
	elapsed := end.Sub(start)
	remaining := validity(m.options.TTL, elapsed, c.options.DriftFactor)
	unusable := c.usable()
	acquired := won != nil && committed && remaining > 0 && unusable == nil
	c.stats.recordAcquire(elapsed, acquired)
	if acquired {
		return won, elapsed, won.startAcquiredHold(start, end, remaining, fence, &won.acquisitionRound().tally, 1), nil
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

// adopt makes the acquisition round of attemptOneOf, counted by tally, the
// Mutex's own: the Mutex won, as the candidate chosen, with token. The
// nodes that confirmed another candidate count as having refused it,
// which they did: they found it held. The caller has the Mutex's turn.
func (m *Mutex) adopt(tally *tally, chosen int64, token []byte) {
	a := &m.acquisition
	own := &m.acquisitionRound().tally
	if own != tally {
		own.command, own.need = tally.command, tally.need
		copy(own.nodes, tally.nodes)
		a.value = append(a.value[:0], token...)
	}
	for i, node := range own.nodes {
		if node.outcome == OutcomeConfirmed && node.choice != chosen {
			own.nodes[i].outcome = OutcomeHeld
		}
	}
	own.recount()
}

// releaseCandidates sends, after a round of attemptOneOf over keys, the
// release of the keys that hold the token but the one kept (at position
// chosen, noChoice for none) to every node that may have set one, without
// waiting for the replies (see releaseSet). A node sets one key at most:
// one that has not answered may have set the key kept, which stays, or
// another, which goes. It removes the key kept from keys.
func (m *Mutex) releaseCandidates(keys []string, chosen int64) {
	if chosen != noChoice {
		keys = append(keys[:chosen], keys[chosen+1:]...)
	}
	if len(keys) == 0 {
		return
	}
	m.lentRounds().candidates = keys
	m.releaseSet(nodeQuietReleasePermits, chosen)
}
