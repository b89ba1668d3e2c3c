package redlock

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/resp"
)

// errNotAwaited is the error of a node whose reply was not awaited because
// the round was already decided. Its outcome is unknown.
var errNotAwaited = errors.New("redlock: reply not awaited: the round was already decided")

// errUnexpectedReply is wrapped for replies no version of the scripts gives.
var errUnexpectedReply = errors.New("redlock: unexpected reply")

// nodeOutcome is what one node answered in the last round of a Mutex.
type nodeOutcome struct {
	outcome Outcome
	latency time.Duration
	err     error
	// config is set when the node's error points at its configuration:
	// retrying cannot fix it.
	config bool
	// number is the largest fencing counter a fenced acquisition read, or
	// the remaining TTL in milliseconds a resumption found.
	number int64
}

// tally counts the replies of one round as mux gathers them. It is owned
// by the goroutine that runs the round.
type tally struct {
	operation Operation
	fenced    bool // an acquisition that reads the fencing counter
	commit    bool // the commit round of a fenced acquisition
	keys      int  // the number of lock keys, which a release must confirm
	need      int
	nodes     []nodeOutcome
	got       int // nodes that confirmed
	refused   int // nodes that answered and did not confirm
	failed    int // nodes that failed: error, timeout, not sent
	down      int // failed nodes that are known down or misconfigured
}

func (t *tally) reset(operation Operation, need int) {
	t.operation, t.need, t.fenced, t.commit = operation, need, false, false
	t.got, t.refused, t.failed, t.down = 0, 0, 0, 0
	for i := range t.nodes {
		t.nodes[i] = nodeOutcome{outcome: OutcomeTimeout, err: errNotAwaited}
	}
}

// Count implements mux.Tally: it classifies node i's outcome and reports
// whether the round is decided.
func (t *tally) Count(node int, round *mux.Round) bool {
	outcome := &t.nodes[node]
	*outcome = nodeOutcome{latency: round.Latency(node)}
	reply := round.Reply(node)
	outcome.outcome, outcome.err, outcome.config = t.classify(round, node)
	if outcome.outcome == OutcomeAcquired {
		switch {
		case t.fenced:
			outcome.number, _ = parseCounter(reply.Str)
		case reply.Type == resp.TypeInteger:
			outcome.number = reply.Int
		}
	}
	switch outcome.outcome {
	case OutcomeAcquired:
		t.got++
	case OutcomeHeld, OutcomeMissing:
		t.refused++
	default:
		t.failed++
		if outcome.outcome == OutcomeNotSent || outcome.config {
			t.down++
		}
	}
	// A round stops early once a quorum confirmed: the nodes still to answer
	// got the command all the same, and a node that is down costs nothing.
	// A failed round waits for every answer: each node's outcome is
	// reported, and after a failed acquisition only a node that definitely
	// refused needs no release, which keeps a failed attempt at one round
	// trip.
	return t.got >= t.need
}

// classify turns node's outcome in round into an Outcome. It allocates
// only for failures.
func (t *tally) classify(round *mux.Round, node int) (Outcome, error, bool) {
	if err := round.Err(node); err != nil {
		switch {
		case round.Abandoned(node):
			return OutcomeTimeout, errNotAwaited, false
		case errors.Is(err, mux.ErrNotConnected):
			if errors.Is(err, mux.ErrAuth) {
				// Rejected credentials or permissions: retrying cannot help.
				return OutcomeNotSent, fmt.Errorf("%w: %w", ErrConfig, err), true
			}
			return OutcomeNotSent, err, false
		case errors.Is(err, os.ErrDeadlineExceeded):
			return OutcomeTimeout, err, false
		}
		return OutcomeError, err, false
	}
	reply := round.Reply(node)
	if reply.IsError() {
		code := string(resp.ErrorCode(reply.Str))
		if code == fenceErrorCode && (t.fenced || t.commit) {
			return OutcomeError, fmt.Errorf("%w: %w", ErrFenceCounter, reply.Err()), true
		}
		if isConfigErrorCode(code) {
			return OutcomeError, fmt.Errorf("%w: %w", ErrConfig, reply.Err()), true
		}
		return OutcomeError, reply.Err(), false
	}
	switch {
	case t.commit:
		if reply.Type == resp.TypeInteger {
			if reply.Int == 1 {
				return OutcomeAcquired, nil, false
			}
			return OutcomeMissing, nil, false
		}
	case t.fenced:
		switch {
		case reply.Type == resp.TypeBulkString && !reply.Null:
			if _, ok := parseCounter(reply.Str); ok {
				return OutcomeAcquired, nil, false
			}
		case reply.Type == resp.TypeInteger && reply.Int == acquireFencedRefused:
			return OutcomeHeld, nil, false
		}
	}
	switch t.operation {
	case OperationLock:
		switch {
		case reply.IsOK():
			return OutcomeAcquired, nil, false
		case reply.Null:
			return OutcomeHeld, nil, false
		case reply.Type == resp.TypeInteger && reply.Int == acquireMultiAcquired:
			return OutcomeAcquired, nil, false
		case reply.Type == resp.TypeInteger && reply.Int == acquireMultiRefused:
			return OutcomeHeld, nil, false
		}
	case OperationExtend:
		if reply.Type == resp.TypeInteger {
			switch reply.Int {
			case extendExtended:
				return OutcomeAcquired, nil, false
			case extendMissing:
				return OutcomeMissing, nil, false
			case extendHeld:
				return OutcomeHeld, nil, false
			}
		}
	case OperationUnlock:
		if reply.Type == resp.TypeInteger {
			if reply.Int == int64(t.keys) {
				return OutcomeAcquired, nil, false
			}
			// Part of a multi-key hold, or none of it, was still ours.
			return OutcomeMissing, nil, false
		}
	case OperationResume:
		if reply.Type == resp.TypeInteger {
			switch {
			case reply.Int >= 0:
				return OutcomeAcquired, nil, false
			case reply.Int == checkHeld:
				return OutcomeHeld, nil, false
			default:
				return OutcomeMissing, nil, false
			}
		}
	}
	return OutcomeError, fmt.Errorf("%w to %s: %s", errUnexpectedReply, t.operation, reply), false
}

// unreachable reports whether the nodes that are down or misconfigured
// alone make a quorum impossible.
func (t *tally) unreachable() bool {
	return len(t.nodes)-t.down < t.need
}

// mayHoldKey reports whether node i may have set the lock key in an
// acquisition round: it confirmed, or its outcome is unknown. Only a
// definite refusal, or a command that was never sent, rules it out.
func (t *tally) mayHoldKey(i int) bool {
	switch t.nodes[i].outcome {
	case OutcomeHeld, OutcomeNotSent:
		return false
	}
	return true
}

// quorumErrorStorage holds a QuorumError and, for up to seven nodes, its
// node errors in one allocation.
type quorumErrorStorage struct {
	QuorumError
	inline [7]NodeError
}

// quorumError returns the error that reports the round.
func (t *tally) quorumError(key string, addresses []string, elapsed time.Duration) *QuorumError {
	storage := &quorumErrorStorage{}
	e := &storage.QuorumError
	e.Operation, e.Key, e.Got, e.Need, e.Elapsed = t.operation, key, t.got, t.need, elapsed
	e.Unreachable = !quorumPossible(t.got, t.failed, len(t.nodes))
	if len(t.nodes) <= len(storage.inline) {
		e.Nodes = storage.inline[:len(t.nodes)]
	} else {
		e.Nodes = make([]NodeError, len(t.nodes))
	}
	for i, node := range t.nodes {
		e.Nodes[i] = NodeError{Address: addresses[i], Outcome: node.outcome, Err: node.err, Latency: node.latency}
	}
	return e
}
