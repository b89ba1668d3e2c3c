package redlock

import "sync"

// A Mutex's acquisition and release run on rounds the Client lends it
// while they run: an idle Mutex, held or not, keeps none. A round costs
// about 2 KB (a command and a reply per node, the quarantine's follow-up
// calls, the tally), and a Client that keeps many holds keeps only as
// many rounds as operations run at once. The pool hands a round back
// without allocating, so a Lock and Unlock in steady state allocate
// nothing.
//
// The rounds are borrowed by the goroutine that owns the Mutex's
// acquisition (see Mutex), at their first use in an operation
// (acquisitionRound), and given back (giveBackRounds) when the hold
// starts and when the turn is given: a hold's release borrows them again
// once it has ended the hold (see Mutex.release).

// lentRounds are the rounds a Mutex borrows: the round of its acquisition
// and release, and the commit round of a fenced acquisition, which shares
// the round's command and keeps a tally of its own.
type lentRounds struct {
	round, commit *nodeRound
}

// roundLender lends the rounds of a Client's Mutexes.
type roundLender struct {
	pool sync.Pool
}

// init makes the lender lend rounds over c's nodes.
func (l *roundLender) init(c *Client) {
	l.pool.New = func() any {
		round := c.newNodeRound()
		// Every node sees this client's acquisitions and releases in one
		// order: a release and an attempt, or two attempts, racing on one
		// key cannot split the nodes between them.
		round.round.Ordered = true
		commit := &nodeRound{round: round.round}
		commit.tally.nodes = make([]nodeOutcome, c.group.Len())
		commit.tally.quarantine = c.quarantine
		return &lentRounds{round: round, commit: commit}
	}
}

// lend returns rounds for one operation, their tallies counting nothing:
// nothing of their last borrower's shows.
func (l *roundLender) lend(c *Client) *lentRounds {
	rounds := l.pool.Get().(*lentRounds)
	rounds.round.tally.reset(nodeAcquire, c.need)
	rounds.commit.tally.reset(nodeCommitFence, c.need)
	return rounds
}

// acquisitionRound returns the round of the Mutex's acquisition and
// release, borrowed from the Client when the Mutex has none. The caller
// owns the acquisition (see Mutex).
func (m *Mutex) acquisitionRound() *nodeRound { return m.lentRounds().round }

// commitRound returns the commit round of a fenced acquisition, as
// acquisitionRound does.
func (m *Mutex) commitRound() *nodeRound { return m.lentRounds().commit }

func (m *Mutex) lentRounds() *lentRounds {
	a := &m.acquisition
	if a.lent == nil {
		a.lent = m.client.rounds.lend(m.client)
	}
	return a.lent
}

// giveBackRounds gives the Mutex's rounds back to the Client, if it has
// any: nothing of them may be read afterwards. The caller owns the
// acquisition.
func (m *Mutex) giveBackRounds() {
	a := &m.acquisition
	if a.lent != nil {
		m.client.rounds.pool.Put(a.lent)
		a.lent = nil
	}
}
