package redlock

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/redlock/internal/round"
)

// nodeOutcome is what one node answered in a round.
type nodeOutcome struct {
	outcome Outcome
	latency time.Duration
	err     error
	// config is set when the node's error points at its configuration:
	// retrying cannot fix it.
	config bool
	// number is what the reply carries besides its outcome: the largest
	// fencing counter a fenced acquisition read, or the remaining TTL in
	// milliseconds a check found.
	number int64
	// choice is, for a command whose row says choice, the candidate the
	// node chose.
	choice int64
}

// tally counts the replies of one round as mux gathers them. It is owned
// by the goroutine that runs the round.
type tally struct {
	command command
	keys    int // the lock keys (or candidates) of the command, set by Mutex.start
	need    int
	nodes   []nodeOutcome
	got     int // nodes that confirmed; for a choice, those of the choice most nodes confirmed
	refused int // nodes that answered and did not confirm
	failed  int // nodes that failed: error, timeout, not sent
	down    int // failed nodes that are known down or misconfigured
	config  int // the misconfigured ones among them
	// quarantine, with Options.Quarantine, keeps the votes of the nodes
	// that may have lost keys from counting; nil without.
	quarantine *quarantine.Quarantine
}

// operation is the operation the round serves, as users see it.
func (t *tally) operation() Operation { return commandTable[t.command].operation }

func (t *tally) reset(command command, need int) {
	t.command, t.need = command, need
	t.got, t.refused, t.failed, t.down, t.config = 0, 0, 0, 0, 0
	for i := range t.nodes {
		t.nodes[i] = nodeOutcome{outcome: OutcomeTimeout, err: errNotAwaited}
	}
}

// Count implements mux.Tally: it reads node i's outcome by the protocol
// table and reports whether the round is decided.
func (t *tally) Count(node int, round *mux.Round) bool {
	outcome := &t.nodes[node]
	*outcome = t.read(round, node)
	outcome.latency = round.Latency(node)
	if q := t.quarantine; q != nil && outcome.outcome == OutcomeConfirmed && commandTable[t.command].counting == votesCount {
		if err := q.Judge(node, round); err != nil {
			outcome.outcome, outcome.err = OutcomeQuarantined, err
		}
	}
	t.add(outcome)
	// A round stops early once a quorum confirmed: the nodes still to answer
	// got the command all the same, and a node that is down costs nothing.
	// A failed round waits for every answer: each node's outcome is
	// reported, and after a failed acquisition only a node that definitely
	// refused needs no release, which keeps a failed attempt at one round
	// trip.
	return t.got >= t.need && commandTable[t.command].counting != everyNodeAnswers
}

// read turns node's outcome in round into a nodeOutcome: the transport's
// failures and the error replies the same way for every command, the
// other replies as the command's row of the protocol table says. It
// allocates only for failures.
func (t *tally) read(round *mux.Round, node int) nodeOutcome {
	if err := round.Err(node); err != nil {
		switch {
		case round.Abandoned(node):
			return nodeOutcome{outcome: OutcomeTimeout, err: errNotAwaited}
		case errors.Is(err, mux.ErrNotConnected):
			if errors.Is(err, mux.ErrAuth) {
				// Rejected credentials or permissions: retrying cannot help.
				return nodeOutcome{outcome: OutcomeNotSent, err: fmt.Errorf("%w: %w", ErrConfig, err), config: true}
			}
			return nodeOutcome{outcome: OutcomeNotSent, err: fmt.Errorf("%w: %w", ErrNodeUnreachable, err)}
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nodeOutcome{outcome: OutcomeTimeout, err: fmt.Errorf("%w: %w", ErrNodeUnreachable, err)}
		}
		// The connection failed: closed, reset, or a reply that broke the
		// protocol.
		return nodeOutcome{outcome: OutcomeError, err: fmt.Errorf("%w: %w", ErrNodeUnreachable, err)}
	}
	command := &commandTable[t.command]
	reply := round.Reply(node)
	if reply.IsError() {
		if command.readError != nil {
			if err, ok := command.readError(reply); ok {
				return nodeOutcome{outcome: OutcomeError, err: err, config: true}
			}
		}
		if isConfigError(string(reply.Str)) {
			return nodeOutcome{outcome: OutcomeError, err: fmt.Errorf("%w: %w", ErrConfig, reply.Err()), config: true}
		}
		return nodeOutcome{outcome: OutcomeError, err: reply.Err()}
	}
	var outcome protocol.Outcome
	var number, choice int64
	var ok bool
	if command.readChoice != nil {
		outcome, number, choice, ok = command.readChoice(reply, t.keys)
	} else {
		outcome, number, ok = command.read(reply, t.keys)
	}
	if !ok {
		return nodeOutcome{outcome: OutcomeError, err: fmt.Errorf("%w to %s: %s", errUnexpectedReply, command.operation, reply)}
	}
	return nodeOutcome{outcome: Outcome(outcome), number: number, choice: choice}
}

// add counts one node's outcome.
func (t *tally) add(outcome *nodeOutcome) {
	switch outcome.outcome {
	case OutcomeConfirmed:
		if commandTable[t.command].readChoice != nil {
			t.got = max(t.got, t.votes(outcome.choice))
			break
		}
		t.got++
	case OutcomeHeld, OutcomeMissing:
		t.refused++
	default:
		t.failed++
		if outcome.outcome == OutcomeNotSent || outcome.config {
			t.down++
		}
		if outcome.config {
			t.config++
		}
	}
}

// recount counts the nodes' outcomes again, after they were changed.
func (t *tally) recount() {
	t.got, t.refused, t.failed, t.down, t.config = 0, 0, 0, 0, 0
	for i := range t.nodes {
		t.add(&t.nodes[i])
	}
}

// takeCommit makes t, the tally of a fenced acquisition whose fence commit
// failed, report the commit: the nodes the commit was sent to, those that
// confirmed the acquisition, count by their answer to it.
func (t *tally) takeCommit(commit *tally) {
	for i := range t.nodes {
		if t.nodes[i].outcome == OutcomeConfirmed {
			t.nodes[i] = commit.nodes[i]
		}
	}
	t.recount()
}

// noChoice is the choice of none: chosen's answer when no quorum chose,
// and what a round whose row does not say choice keeps.
const noChoice = -1

// votes returns the number of nodes that confirmed a command whose row
// says choice with the choice given.
func (t *tally) votes(choice int64) int {
	votes := 0
	for _, node := range t.nodes {
		if node.outcome == OutcomeConfirmed && node.choice == choice {
			votes++
		}
	}
	return votes
}

// chosen returns the choice a quorum of nodes confirmed, for a command
// whose row says choice, or noChoice.
func (t *tally) chosen() int64 {
	for _, node := range t.nodes {
		if node.outcome == OutcomeConfirmed && t.votes(node.choice) >= t.need {
			return node.choice
		}
	}
	return noChoice
}

// held returns the number of nodes that refused because the key was held.
func (t *tally) held() int {
	held := 0
	for _, node := range t.nodes {
		if node.outcome == OutcomeHeld {
			held++
		}
	}
	return held
}

// likeliest returns, after a round of a command whose row says choice
// that no quorum decided, the smallest choice that enough nodes may have
// free: a node that chose c had every choice before c taken and c free,
// and did not look past c. It is the need-th smallest choice the nodes
// confirmed, or noChoice when fewer than need confirmed.
func (t *tally) likeliest() int64 {
	best := int64(noChoice)
	for _, node := range t.nodes {
		if node.outcome != OutcomeConfirmed || (best >= 0 && node.choice >= best) {
			continue
		}
		free := 0 // the nodes that chose this choice or one before it
		for _, other := range t.nodes {
			if other.outcome == OutcomeConfirmed && other.choice <= node.choice {
				free++
			}
		}
		if free >= t.need {
			best = node.choice
		}
	}
	return best
}

// unreachable reports whether the nodes that are down or misconfigured
// alone make a quorum impossible.
func (t *tally) unreachable() bool {
	return len(t.nodes)-t.down < t.need
}

// downByTransport reports whether some of the nodes that are down failed
// for the transport, not for their configuration: dialling them again may
// help.
func (t *tally) downByTransport() bool {
	return t.down > t.config
}

// refusedOnQuorumFor returns how long, after an acquisition round, a
// quorum of nodes will go on refusing, as the nodes told: the time until
// the need-th node frees the keys, a node that confirmed counting as free
// at once (its keys were released after the failed attempt). It returns 0
// when no quorum of nodes told, and then the wait is not bounded by it.
func (t *tally) refusedOnQuorumFor() time.Duration {
	known := func(node nodeOutcome) (int64, bool) {
		switch {
		case node.outcome == OutcomeConfirmed:
			return 0, true
		case node.outcome == OutcomeHeld && node.number >= 0:
			return node.number, true
		}
		return 0, false
	}
	best := int64(-1)
	for _, candidate := range t.nodes {
		v, ok := known(candidate)
		if !ok || (best >= 0 && v >= best) {
			continue
		}
		free := 0 // the nodes free by the time v passes
		for _, node := range t.nodes {
			if w, ok := known(node); ok && w <= v {
				free++
			}
		}
		if free >= t.need {
			best = v
		}
	}
	if best < 0 {
		return 0
	}
	// A millisecond more: a node counts its TTL from when it ran the
	// command, before its reply came, and a key expires at the end of
	// its last millisecond.
	return time.Duration(best+1) * time.Millisecond
}

// lostPlace reports, after a fair lock's waiter's attempt failed, whether
// it lost its place in line: some node answered that the waiter is not
// in its line (protocol.RefusalOutOfLine), and fewer than a quorum answered that
// it is. Such a waiter is served only once it joins the line again.
func (t *tally) lostPlace() bool {
	lost, kept := 0, 0
	for _, node := range t.nodes {
		switch {
		case node.outcome != OutcomeHeld:
		case node.number == protocol.RefusalOutOfLine:
			lost++
		default:
			kept++
		}
	}
	return lost > 0 && kept < t.need
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

// mayHoldOther reports whether node i may have set a key in an
// acquisition round, as mayHoldKey says, other than the candidate kept: a
// node that confirmed kept set that key alone (noChoice keeps none).
func (t *tally) mayHoldOther(i int, kept int64) bool {
	node := &t.nodes[i]
	return t.mayHoldKey(i) && (node.outcome != OutcomeConfirmed || node.choice != kept)
}

// refusedByConfiguration reports whether the nodes that refused a round
// for their configuration (an ACL without a command the scripts call)
// alone leave no quorum: retrying cannot fix that.
func (t *tally) refusedByConfiguration() bool {
	return t.config > 0 && len(t.nodes)-t.config < t.need
}

// quorumErrorStorage holds a QuorumError and, for up to seven nodes, its
// node errors in one allocation.
type quorumErrorStorage struct {
	QuorumError
	inline [7]NodeResult
}

// copyFrom makes t a copy of other, reusing t's nodes.
func (t *tally) copyFrom(other *tally) {
	nodes := append(t.nodes[:0], other.nodes...)
	*t = *other
	t.nodes = nodes
}

// quorumError returns the error that reports the round.
func (t *tally) quorumError(key string, addresses []string, elapsed time.Duration) *QuorumError {
	storage := &quorumErrorStorage{}
	e := &storage.QuorumError
	e.Operation, e.Key, e.Got, e.Need, e.Elapsed = t.operation(), key, t.got, t.need, elapsed
	e.Unreachable = !round.QuorumPossible(t.got, t.failed, len(t.nodes))
	if len(t.nodes) <= len(storage.inline) {
		e.Nodes = storage.inline[:len(t.nodes)]
	} else {
		e.Nodes = make([]NodeResult, len(t.nodes))
	}
	for i, node := range t.nodes {
		e.Nodes[i] = NodeResult{Address: addresses[i], Outcome: node.outcome, Err: node.err, Latency: node.latency}
	}
	return e
}
