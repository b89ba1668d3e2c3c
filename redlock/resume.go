package redlock

import (
	"context"
	"slices"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/round"
)

// resume checks whether a quorum of nodes still holds the keys with
// MutexOptions.Token and, if so, takes the hold over with the validity the
// nodes have left: the need-th longest remaining TTL, counted from the
// start of the check, less the drift allowance of that remaining TTL. The
// allowance follows the TTL the hold relies on, as an acquisition's
// follows the TTL it set, never the resumer's MutexOptions.TTL: a hold
// resumed at once is valid no longer than its acquirer's. It returns the
// hold's generation, 0 when the hold was not resumed: the attempt then
// goes on as an acquisition with the same token. attempt is the number of
// the attempt it begins, which the observer is told.
func (m *Mutex) resume(ctx context.Context, attempt int) (time.Duration, uint64) {
	c := m.client
	clock := c.options.clock
	start := clock.Now()
	a := &m.acquisition
	r := m.acquisitionRound()
	m.start(r, round.Check, a.token(), 0, nil)
	waitErr := m.exchange(ctx, r)
	end := clock.Now()
	elapsed := end.Sub(start)
	tally := &r.Tally
	if tally.Got < c.need || waitErr != nil || c.usable() != nil {
		return elapsed, 0
	}
	lent := m.lentRounds()
	remaining := lent.RemainingTTLs[:0]
	for _, node := range tally.Nodes {
		if node.Outcome == round.OutcomeConfirmed {
			remaining = append(remaining, node.Number)
		}
	}
	slices.Sort(remaining)
	// A quorum holds the keys for at least the need-th longest TTL.
	quorumTTL := time.Duration(remaining[len(remaining)-c.need]) * time.Millisecond
	until := start.Add(round.Validity(quorumTTL, 0, c.options.DriftFactor))
	lent.RemainingTTLs = remaining
	if !until.After(end) {
		return elapsed, 0
	}
	c.stats.recordAcquire(elapsed, true)
	got := tally.Got // nothing of the tally is read once the hold starts
	generation := m.startHold(start, until, 0, tally)
	if observer := c.options.Observer; observer != nil {
		observer.OnAcquire(AcquireEvent{Key: m.key, Attempt: attempt, Got: got, Need: c.need, Elapsed: elapsed, Validity: until.Sub(end)})
	}
	return elapsed, generation
}
