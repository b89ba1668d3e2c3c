package round

import "time"

// driftAllowance is the fixed part of the drift allowance: the servers'
// expiry clocks' granularity.
const driftAllowance = 2 * time.Millisecond

// Quorum returns how many of nodes must confirm: a strict majority,
// nodes/2+1, so that two quorums always share a node.
func Quorum(nodes int) int {
	return nodes/2 + 1
}

// Drift returns the clock drift allowance for a ttl: ttl·driftFactor plus
// driftAllowance.
func Drift(ttl time.Duration, driftFactor float64) time.Duration {
	return time.Duration(float64(ttl)*driftFactor) + driftAllowance
}

// Validity returns how long a hold taken with ttl stays valid after an
// operation that took elapsed, from its start: ttl − elapsed − Drift.
// A result ≤ 0 means the hold must not be reported.
func Validity(ttl, elapsed time.Duration, driftFactor float64) time.Duration {
	return ttl - elapsed - Drift(ttl, driftFactor)
}

// quorumState is the state of a round's count of confirmations.
type quorumState uint8

const (
	quorumPending    quorumState = iota // the nodes yet to answer decide
	quorumReached                       // a quorum confirmed
	quorumImpossible                    // no quorum even if every node left confirms
)

// countQuorum decides a round of total nodes in which got confirmed and
// failed will not; the rest have not answered. Counts that do not add up
// are impossible.
func countQuorum(got, failed, total int) quorumState {
	if got < 0 || failed < 0 || got+failed > total {
		return quorumImpossible
	}
	need := Quorum(total)
	switch {
	case got >= need:
		return quorumReached
	case total-failed < need:
		return quorumImpossible
	}
	return quorumPending
}

// QuorumPossible reports whether a round of total nodes, of which got
// confirmed and failed will not, can still reach a quorum. With only the
// nodes' failures as failed, false is redlock.ErrQuorumUnreachable.
func QuorumPossible(got, failed, total int) bool {
	return countQuorum(got, failed, total) != quorumImpossible
}
