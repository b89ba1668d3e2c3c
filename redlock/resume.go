package redlock

import (
	"context"
	"slices"
	"time"
)

// resume checks whether a quorum of nodes still holds the keys with
// MutexOptions.Token and, if so, takes the hold over with the validity the
// nodes have left: the need-th longest remaining TTL, counted from the
// start of the check, less the drift allowance. It reports whether the
// hold was resumed; otherwise the attempt goes on as an acquisition with
// the same token.
func (m *Mutex) resume(ctx context.Context) (time.Duration, bool) {
	c := m.client
	clock := c.options.Clock
	start := clock.Now()
	m.buildScript(m.round, checkLua, -1)
	m.tally.reset(OperationResume, c.need)
	c.group.Send(m.round, m.roundDeadline())
	waitErr := c.group.Wait(ctx, m.round, &m.tally)
	end := clock.Now()
	elapsed := end.Sub(start)
	m.reportNodeErrors()
	if m.tally.got < c.need || waitErr != nil || c.misconfigured() != nil {
		return elapsed, false
	}
	remaining := m.remainingTTLs[:0]
	for _, node := range m.tally.nodes {
		if node.outcome == OutcomeAcquired {
			remaining = append(remaining, node.number)
		}
	}
	slices.Sort(remaining)
	// A quorum holds the keys for at least the need-th longest TTL.
	quorumTTL := time.Duration(remaining[len(remaining)-c.need]) * time.Millisecond
	until := start.Add(quorumTTL - drift(m.options.TTL, c.options.DriftFactor))
	m.remainingTTLs = remaining
	if !until.After(end) {
		return elapsed, false
	}
	c.stats.recordAcquire(elapsed, true)
	got := m.tally.got // nothing of the tally is read once the hold starts
	m.startHold(start, until, 0)
	if observer := c.options.Observer; observer != nil {
		observer.OnAcquire(AcquireEvent{Key: m.key, Got: got, Need: c.need, Elapsed: elapsed, Validity: until.Sub(end)})
	}
	return elapsed, true
}
