package redlock

import (
	"context"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/round"
)

// newNodeRound returns a round over the Client's nodes.
func (c *Client) newNodeRound() *round.Round { return round.New(c.group, c.quarantine) }

// start writes command for every node, as round.Round.Start does, for the
// Mutex's lock.
func (m *Mutex) start(r *round.Round, command round.Command, token []byte, number int64, identity []byte) {
	r.Lock = round.Lock{Kind: m.kind, Keys: m.keys, FenceKeys: m.fenceKeys(), Guards: m.guards(),
		AnnounceOn: m.announceOn, Extras: &m.acquisition.extras}
	if r.Start(command, token, number, identity) {
		r.Mux.Carry(m.releaseCarriedUntil(), m.key)
	}
}

// exchange posts the round and gathers its replies; the nodes that failed
// are reported. The error is ctx's when it ended first.
func (m *Mutex) exchange(ctx context.Context, r *round.Round) error {
	m.post(r)
	return m.gather(ctx, r)
}

// post sends the round's command, which gather then counts.
func (m *Mutex) post(r *round.Round) {
	c := m.client
	r.Post(c.group, c.need, c.roundDeadline())
}

// queue is post without the write (round.Round.Queue).
func (m *Mutex) queue(r *round.Round) {
	c := m.client
	r.Queue(c.group, c.need, c.roundDeadline())
}

// gather is the second half of exchange, for a round that post sent.
func (m *Mutex) gather(ctx context.Context, r *round.Round) error {
	err := r.Gather(ctx, m.client.group)
	m.reportNodeErrors(&r.Tally)
	return err
}

// send sends the round's command without waiting for the replies.
func (m *Mutex) send(r *round.Round) {
	c := m.client
	r.Send(c.group, c.roundDeadline())
}

// roundDeadline is when the nodes' replies are due: one node timeout from
// now. It is never the caller's deadline, which only ends its wait.
func (c *Client) roundDeadline() time.Time {
	return time.Now().Add(c.options.NodeTimeout)
}

// releaseCarriedUntil is when a release sent now stops mattering: a node
// timeout, a TTL and its drift allowance later (see mux.Round.Carry).
func (m *Mutex) releaseCarriedUntil() time.Time {
	c := m.client
	ttl := max(m.ttl, time.Duration(m.hold.LongestTTL.Load()))
	return time.Now().Add(ttl + round.Drift(ttl, c.options.DriftFactor) + c.options.NodeTimeout)
}

// reportNodeErrors counts the failed nodes of a round and tells the
// observer about them.
func (m *Mutex) reportNodeErrors(tally *round.Tally) {
	if tally.Failed == 0 {
		return
	}
	observer := m.client.options.Observer
	for i, node := range tally.Nodes {
		switch node.Outcome {
		case round.OutcomeError, round.OutcomeTimeout, round.OutcomeNotSent, round.OutcomeQuarantined:
			if node.Err == errNotAwaited {
				continue
			}
			m.client.stats.recordNodeError(Outcome(node.Outcome))
			if observer != nil {
				observer.OnNodeError(NodeErrorEvent{Key: m.key, Operation: Operation(tally.Operation()), Address: m.client.addresses[i],
					Outcome: Outcome(node.Outcome), Latency: node.Latency, Err: node.Err})
			}
		}
	}
}

// quorumErrorStorage holds a QuorumError and, for up to seven nodes, its
// node errors in one allocation.
type quorumErrorStorage struct {
	QuorumError
	inline [7]NodeResult
}

// quorumError returns the error that reports the round t counted.
func quorumError(t *round.Tally, key string, addresses []string, elapsed time.Duration) *QuorumError {
	storage := &quorumErrorStorage{}
	e := &storage.QuorumError
	e.Operation, e.Key, e.Got, e.Need, e.Elapsed = Operation(t.Operation()), key, t.Got, t.Need, elapsed
	e.Unreachable = !round.QuorumPossible(t.Got, t.Failed, len(t.Nodes))
	if len(t.Nodes) <= len(storage.inline) {
		e.Nodes = storage.inline[:len(t.Nodes)]
	} else {
		e.Nodes = make([]NodeResult, len(t.Nodes))
	}
	for i, node := range t.Nodes {
		e.Nodes[i] = NodeResult{Address: addresses[i], Outcome: Outcome(node.Outcome), Err: node.Err, Latency: node.Latency}
	}
	return e
}

// acquisitionRound returns the round of the Mutex's acquisition and
// release, borrowed (round.Lender) at its first use in an operation. The
// caller owns the acquisition (see Mutex).
func (m *Mutex) acquisitionRound() *round.Round { return m.lentRounds().Round }

// commitRound returns the commit round of a fenced acquisition, as
// acquisitionRound does.
func (m *Mutex) commitRound() *round.Round { return m.lentRounds().Commit }

func (m *Mutex) lentRounds() *round.Rounds {
	a := &m.acquisition
	if a.lent == nil {
		a.lent = m.client.rounds.Lend()
	}
	return a.lent
}

// giveBackRounds gives the Mutex's rounds back, when the hold starts and
// when the turn is given: nothing of them may be read afterwards. The
// caller owns the acquisition.
func (m *Mutex) giveBackRounds() {
	a := &m.acquisition
	if a.lent != nil {
		m.client.rounds.GiveBack(a.lent)
		a.lent = nil
	}
}
