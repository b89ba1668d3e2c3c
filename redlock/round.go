package redlock

import (
	"context"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/redlock/internal/round"
)

// nodeRound is one round of a Mutex: one command of the protocol table
// for every node, and the count of their replies. Every operation runs
// its rounds through it: start writes the command, exchange sends it and
// gathers the replies (or send sends it and leaves them to the
// transport), and the tally says what each node answered. A nodeRound
// belongs to one goroutine at a time; the Mutex's fields say whose.
type nodeRound struct {
	round   *mux.Round
	command command // the command written last
	tally   tally
	// identity is the identity of the release the round sends: a field,
	// so that passing it to the protocol's rows allocates nothing.
	identity [releaseIdentityLength]byte
}

// newNodeRound returns a round over the Client's nodes.
func (c *Client) newNodeRound() *nodeRound {
	r := &nodeRound{round: c.group.NewRound()}
	r.tally.nodes = make([]nodeOutcome, c.group.Len())
	r.tally.quarantine = c.quarantine
	if c.quarantine != nil {
		r.round.SetFollowUp(quarantine.MarkerScript, epochKey) // a vote's node must still hold its marker (Quarantine.Judge)
	}
	return r
}

// start writes command, as the Mutex's kind maps it (commandsOf), for
// every node: the keys and arguments its row of the protocol table gives,
// around the token. It makes the tally ready to count the replies. The
// nodes skipped (mux.Round.Skip) before or after it stay skipped.
func (m *Mutex) start(r *nodeRound, command command, token []byte, number int64, identity []byte) {
	command = commandsOf[m.kind][command]
	row := &commandTable[command]
	r.command = command
	r.round.FollowUp = r.tally.quarantine != nil && row.counting == votesCount
	keys := row.keys(m)
	r.tally.keys = keys.counted
	if row.script == nil {
		r.round.StartCommand(6, "SET")
		r.round.AppendString(m.key)
		r.round.AppendBulk(token)
		r.round.AppendString("NX")
		r.round.AppendString("PX")
		r.round.AppendInt(number)
	} else {
		arguments := row.arguments(m, number, identity)
		if row.bySHA() {
			r.round.SetScript(row.script, keys.count(), arguments.count())
		} else {
			r.round.SetEval(row.script, keys.count(), arguments.count())
		}
		keys.appendTo(r.round)
		r.round.AppendBulk(token)
		arguments.appendTo(r.round)
	}
	switch row.dispatch {
	case sentCarried:
		r.round.Carry(m.releaseCarriedUntil(), m.key)
	case sentDelivered:
		r.round.Deliver()
	}
}

// exchange sends the round's command to every node not skipped and
// gathers the replies until the round is decided, the nodes' deadline
// (one node timeout) passes, or ctx ends; the nodes that failed are
// reported. The error is ctx's when it ended first: the nodes' replies
// are then read and dropped by the transport, and the connections go on.
func (m *Mutex) exchange(ctx context.Context, r *nodeRound) error {
	m.post(r)
	return m.gather(ctx, r)
}

// post sends the round's command to every node not skipped, and makes
// the tally ready to count its replies, which gather then reads.
func (m *Mutex) post(r *nodeRound) {
	c := m.client
	r.tally.reset(r.command, c.need)
	c.group.Send(r.round, c.roundDeadline())
}

// queue is post without the write: the command waits in the
// connections' buffers until the caller flushes them (mux.Group.Flush),
// or a wait for a reply does.
func (m *Mutex) queue(r *nodeRound) {
	c := m.client
	r.tally.reset(r.command, c.need)
	c.group.Queue(r.round, c.roundDeadline())
}

// gather is the second half of exchange, for a round that post sent.
func (m *Mutex) gather(ctx context.Context, r *nodeRound) error {
	err := m.client.group.Wait(ctx, r.round, &r.tally)
	m.reportNodeErrors(&r.tally)
	return err
}

// send sends the round's command to every node not skipped without
// waiting for the replies: the transport reads them, and finishes a
// carried release whoever waits.
func (m *Mutex) send(r *nodeRound) {
	c := m.client
	c.group.Send(r.round, c.roundDeadline())
	c.group.Discard(r.round)
}

// roundDeadline is when the nodes' replies are due: one node timeout from
// now. It is the nodes' deadline, never the caller's: a caller whose
// context ends sooner stops waiting (mux.Group.Wait), and the connections
// it shares with others go on.
func (c *Client) roundDeadline() time.Time {
	return time.Now().Add(c.options.NodeTimeout)
}

// releaseCarriedUntil is when a release sent now stops mattering on a node
// that has not answered it: every command that could have set or extended
// the keys before it was sent has run, or never will, by one node timeout
// after it (the connection fails then, see mux.Round.Carry), and their TTL
// has passed a TTL and the drift allowance later.
func (m *Mutex) releaseCarriedUntil() time.Time {
	c := m.client
	ttl := max(m.options.TTL, time.Duration(m.hold.LongestTTL.Load()))
	return time.Now().Add(ttl + round.Drift(ttl, c.options.DriftFactor) + c.options.NodeTimeout)
}

// reportNodeErrors counts the failed nodes of a round and tells the
// observer about them.
func (m *Mutex) reportNodeErrors(tally *tally) {
	if tally.failed == 0 {
		return
	}
	observer := m.client.options.Observer
	for i, node := range tally.nodes {
		switch node.outcome {
		case OutcomeError, OutcomeTimeout, OutcomeNotSent, OutcomeQuarantined:
			if node.err == errNotAwaited {
				continue
			}
			m.client.stats.recordNodeError(node.outcome)
			if observer != nil {
				observer.OnNodeError(NodeErrorEvent{Key: m.key, Operation: tally.operation(), Address: m.client.addresses[i],
					Outcome: node.outcome, Latency: node.latency, Err: node.err})
			}
		}
	}
}
