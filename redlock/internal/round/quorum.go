package round

import "time"

// driftAllowance is the fixed part of the clock drift allowance, added to
// ttl·driftFactor. It covers the granularity of the servers' expiry clocks.
const driftAllowance = 2 * time.Millisecond

// Quorum returns the number of nodes that must confirm an operation out of
// nodes: a strict majority, nodes/2+1. Two quorums of the same nodes always
// share a node. For an even count this is one more than half (2 of 2, 3 of
// 4, 4 of 6).
func Quorum(nodes int) int {
	return nodes/2 + 1
}

// Drift returns the clock drift allowance for a ttl: ttl·driftFactor plus
// driftAllowance.
func Drift(ttl time.Duration, driftFactor float64) time.Duration {
	return time.Duration(float64(ttl)*driftFactor) + driftAllowance
}

// Validity returns how long a hold taken with ttl stays valid after an
// operation that took elapsed, measured from that operation's start:
// ttl − elapsed − (ttl·driftFactor + 2 ms). A result ≤ 0 means the hold must
// not be reported. The drift is subtracted, never added, so the result is
// never greater than ttl − elapsed.
func Validity(ttl, elapsed time.Duration, driftFactor float64) time.Duration {
	return ttl - elapsed - Drift(ttl, driftFactor)
}

// quorumState is the state of a round's count of confirmations.
type quorumState uint8

const (
	// quorumPending means the nodes yet to answer decide the round.
	quorumPending quorumState = iota
	// quorumReached means a quorum of nodes confirmed.
	quorumReached
	// quorumImpossible means that even if every node yet to answer
	// confirmed, there would be no quorum.
	quorumImpossible
)

// countQuorum decides a round of total nodes in which got nodes confirmed
// and failed nodes will not confirm (they refused, failed or timed out); the
// rest have not answered yet. Counts that do not add up (negative, or got +
// failed > total) are reported as impossible.
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

// QuorumPossible reports whether a quorum can still be reached in a round of
// total nodes in which got nodes confirmed and failed nodes will not
// confirm. Passing only the node failures (errors, timeouts, commands not
// sent) as failed tells whether the quorum is unreachable, which
// redlock.ErrQuorumUnreachable reports; passing every refusal tells whether waiting
// for the remaining nodes can change the result.
func QuorumPossible(got, failed, total int) bool {
	return countQuorum(got, failed, total) != quorumImpossible
}
