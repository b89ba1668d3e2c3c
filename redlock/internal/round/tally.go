package round

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
)

// Outcome is what one node answered, as redlock.Outcome numbers it.
type Outcome uint8

// The outcomes, in redlock.Outcome's order.
const (
	OutcomeConfirmed Outcome = iota
	OutcomeHeld
	OutcomeMissing
	OutcomeError
	OutcomeTimeout
	OutcomeNotSent
	OutcomeQuarantined
)

// NodeOutcome is what one node answered in a round.
type NodeOutcome struct {
	Outcome Outcome
	Latency time.Duration
	Err     error
	// config is set when the node's error points at its configuration:
	// retrying cannot fix it.
	config bool
	// Number is what the reply carries besides its outcome: the largest
	// fencing counter a fenced acquisition read, or the remaining TTL in
	// milliseconds a check found.
	Number int64
	// Choice is, for a command whose row says choice, the candidate the
	// node chose.
	Choice int64
}

// Tally counts the replies of one round as mux gathers them. It is owned
// by the goroutine that runs the round.
type Tally struct {
	Command Command
	keys    int // the lock keys (or candidates) of the command, set by Round.Start
	Need    int
	Nodes   []NodeOutcome
	Got     int // nodes that confirmed; for a choice, those of the choice most nodes confirmed
	Refused int // nodes that answered and did not confirm
	Failed  int // nodes that failed: error, timeout, not sent
	down    int // failed nodes that are known down or misconfigured
	config  int // the misconfigured ones among them
	// quarantine, with redlock.Options.Quarantine, keeps the votes of the nodes
	// that may have lost keys from counting; nil without.
	quarantine *quarantine.Quarantine
}

// Operation is the operation the round serves, as users see it.
func (t *Tally) Operation() Operation { return commandTable[t.Command].operation }

// Reset makes t ready to count a round of command, of which need nodes
// must confirm: every node's outcome is a timeout until it answers.
func (t *Tally) Reset(command Command, need int) {
	t.Command, t.Need = command, need
	t.Got, t.Refused, t.Failed, t.down, t.config = 0, 0, 0, 0, 0
	for i := range t.Nodes {
		t.Nodes[i] = NodeOutcome{Outcome: OutcomeTimeout, Err: ErrNotAwaited}
	}
}

// Count implements mux.Tally: it reads node i's outcome by the protocol
// table and reports whether the round is decided.
func (t *Tally) Count(node int, round *mux.Round) bool {
	outcome := &t.Nodes[node]
	*outcome = t.read(round, node)
	outcome.Latency = round.Latency(node)
	if q := t.quarantine; q != nil && outcome.Outcome == OutcomeConfirmed && commandTable[t.Command].counting == votesCount {
		if err := q.Judge(node, round); err != nil {
			outcome.Outcome, outcome.Err = OutcomeQuarantined, err
		}
	}
	t.add(outcome)
	// A quorum ends the round early; a failed round waits for every
	// answer, so that only the nodes that surely refused get no release.
	return t.Got >= t.Need && commandTable[t.Command].counting != everyNodeAnswers
}

// read turns node's outcome in round into a NodeOutcome: failures and
// error replies alike for every command, other replies by the row. It
// allocates only for failures.
func (t *Tally) read(round *mux.Round, node int) NodeOutcome {
	if err := round.Err(node); err != nil {
		switch {
		case round.Abandoned(node):
			return NodeOutcome{Outcome: OutcomeTimeout, Err: ErrNotAwaited}
		case errors.Is(err, mux.ErrNotConnected):
			if errors.Is(err, mux.ErrAuth) {
				// Rejected credentials or permissions: retrying cannot help.
				return NodeOutcome{Outcome: OutcomeNotSent, Err: fmt.Errorf("%w: %w", ErrConfig, err), config: true}
			}
			return NodeOutcome{Outcome: OutcomeNotSent, Err: fmt.Errorf("%w: %w", ErrNodeUnreachable, err)}
		case errors.Is(err, os.ErrDeadlineExceeded):
			return NodeOutcome{Outcome: OutcomeTimeout, Err: fmt.Errorf("%w: %w", ErrNodeUnreachable, err)}
		}
		// The connection failed: closed, reset, or a reply that broke the
		// protocol.
		return NodeOutcome{Outcome: OutcomeError, Err: fmt.Errorf("%w: %w", ErrNodeUnreachable, err)}
	}
	command := &commandTable[t.Command]
	reply := round.Reply(node)
	if reply.IsError() {
		if command.readError != nil {
			if err, ok := command.readError(reply); ok {
				return NodeOutcome{Outcome: OutcomeError, Err: err, config: true}
			}
		}
		if IsConfigError(string(reply.Str)) {
			return NodeOutcome{Outcome: OutcomeError, Err: fmt.Errorf("%w: %w", ErrConfig, reply.Err()), config: true}
		}
		return NodeOutcome{Outcome: OutcomeError, Err: reply.Err()}
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
		return NodeOutcome{Outcome: OutcomeError, Err: fmt.Errorf("%w to %s: %s", ErrUnexpectedReply, command.operation, reply)}
	}
	return NodeOutcome{Outcome: Outcome(outcome), Number: number, Choice: choice}
}

// add counts one node's outcome.
func (t *Tally) add(outcome *NodeOutcome) {
	switch outcome.Outcome {
	case OutcomeConfirmed:
		if commandTable[t.Command].readChoice != nil {
			t.Got = max(t.Got, t.votes(outcome.Choice))
			break
		}
		t.Got++
	case OutcomeHeld, OutcomeMissing:
		t.Refused++
	default:
		t.Failed++
		if outcome.Outcome == OutcomeNotSent || outcome.config {
			t.down++
		}
		if outcome.config {
			t.config++
		}
	}
}

// Recount counts the nodes' outcomes again, after they were changed.
func (t *Tally) Recount() {
	t.Got, t.Refused, t.Failed, t.down, t.config = 0, 0, 0, 0, 0
	for i := range t.Nodes {
		t.add(&t.Nodes[i])
	}
}

// TakeCommit makes t, the Tally of a fenced acquisition whose fence commit
// failed, report the commit: the nodes the commit was sent to, those that
// confirmed the acquisition, count by their answer to it.
func (t *Tally) TakeCommit(commit *Tally) {
	for i := range t.Nodes {
		if t.Nodes[i].Outcome == OutcomeConfirmed {
			t.Nodes[i] = commit.Nodes[i]
		}
	}
	t.Recount()
}

// NoChoice is the choice of none: Chosen's answer when no quorum chose,
// and what a round whose row does not say choice keeps.
const NoChoice = -1

// votes returns the number of nodes that confirmed a command whose row
// says choice with the choice given.
func (t *Tally) votes(choice int64) int {
	votes := 0
	for _, node := range t.Nodes {
		if node.Outcome == OutcomeConfirmed && node.Choice == choice {
			votes++
		}
	}
	return votes
}

// Chosen returns the choice a quorum of nodes confirmed, for a command
// whose row says choice, or NoChoice.
func (t *Tally) Chosen() int64 {
	for _, node := range t.Nodes {
		if node.Outcome == OutcomeConfirmed && t.votes(node.Choice) >= t.Need {
			return node.Choice
		}
	}
	return NoChoice
}

// Held returns the number of nodes that refused because the key was held.
func (t *Tally) Held() int {
	held := 0
	for _, node := range t.Nodes {
		if node.Outcome == OutcomeHeld {
			held++
		}
	}
	return held
}

// Likeliest returns, after a choice no quorum decided, the smallest
// choice enough nodes may have free: the need-th smallest confirmed, or
// NoChoice. A node that chose c had every choice before c taken.
func (t *Tally) Likeliest() int64 {
	best := int64(NoChoice)
	for _, node := range t.Nodes {
		if node.Outcome != OutcomeConfirmed || (best >= 0 && node.Choice >= best) {
			continue
		}
		free := 0 // the nodes that chose this choice or one before it
		for _, other := range t.Nodes {
			if other.Outcome == OutcomeConfirmed && other.Choice <= node.Choice {
				free++
			}
		}
		if free >= t.Need {
			best = node.Choice
		}
	}
	return best
}

// Unreachable reports whether the nodes that are down or misconfigured
// alone make a quorum impossible.
func (t *Tally) Unreachable() bool {
	return len(t.Nodes)-t.down < t.Need
}

// DownByTransport reports whether some nodes are down for the transport,
// not their configuration: dialling them again may help.
func (t *Tally) DownByTransport() bool {
	return t.down > t.config
}

// RefusedOnQuorumFor returns how long, after an acquisition, a quorum
// will go on refusing, as the nodes told: until the need-th node frees
// the keys, a node that confirmed being free. It is 0 when no quorum told.
func (t *Tally) RefusedOnQuorumFor() time.Duration {
	known := func(node NodeOutcome) (int64, bool) {
		switch {
		case node.Outcome == OutcomeConfirmed:
			return 0, true
		case node.Outcome == OutcomeHeld && node.Number >= 0:
			return node.Number, true
		}
		return 0, false
	}
	best := int64(-1)
	for _, candidate := range t.Nodes {
		v, ok := known(candidate)
		if !ok || (best >= 0 && v >= best) {
			continue
		}
		free := 0 // the nodes free by the time v passes
		for _, node := range t.Nodes {
			if w, ok := known(node); ok && w <= v {
				free++
			}
		}
		if free >= t.Need {
			best = v
		}
	}
	if best < 0 {
		return 0
	}
	// A millisecond more: a key expires at the end of its last one.
	return time.Duration(best+1) * time.Millisecond
}

// LostPlace reports whether a fair lock's waiter lost its place in line:
// a node said it is not in line (protocol.RefusalOutOfLine), and fewer
// than a quorum said it is.
func (t *Tally) LostPlace() bool {
	lost, kept := 0, 0
	for _, node := range t.Nodes {
		switch {
		case node.Outcome != OutcomeHeld:
		case node.Number == protocol.RefusalOutOfLine:
			lost++
		default:
			kept++
		}
	}
	return lost > 0 && kept < t.Need
}

// MayHoldKey reports whether node i may have set the lock key in an
// acquisition: only a refusal, or a command never sent, rules it out.
func (t *Tally) MayHoldKey(i int) bool {
	switch t.Nodes[i].Outcome {
	case OutcomeHeld, OutcomeNotSent:
		return false
	}
	return true
}

// MayHoldOther is MayHoldKey for any key but the candidate kept, which a
// node that confirmed kept set alone (NoChoice keeps none).
func (t *Tally) MayHoldOther(i int, kept int64) bool {
	node := &t.Nodes[i]
	return t.MayHoldKey(i) && (node.Outcome != OutcomeConfirmed || node.Choice != kept)
}

// RefusedByConfiguration reports whether the nodes that refused for their
// configuration alone leave no quorum: retrying cannot fix that.
func (t *Tally) RefusedByConfiguration() bool {
	return t.config > 0 && len(t.Nodes)-t.config < t.Need
}

// CopyFrom makes t a copy of other, reusing t's nodes.
func (t *Tally) CopyFrom(other *Tally) {
	nodes := append(t.Nodes[:0], other.Nodes...)
	*t = *other
	t.Nodes = nodes
}
