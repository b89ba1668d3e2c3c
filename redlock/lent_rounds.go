package redlock

import "sync"

// A Mutex's acquisition and release run on rounds the Client lends it
// while they run: an idle Mutex, held or not, keeps none. A round costs
// about 2 KB (a command and a reply per node, the quarantine's follow-up
// calls, the tally), and a Client that keeps many holds keeps only as
// many rounds as operations run at once. The spare rounds are kept on a
// free list, not in a sync.Pool: a garbage collection would empty the
// pool, and the Locks after it would allocate their rounds again.
//
// The rounds are borrowed by the goroutine that owns the Mutex's
// acquisition (see Mutex), at their first use in an operation
// (acquisitionRound), and given back (giveBackRounds) when the hold
// starts and when the turn is given: a hold's release borrows them again
// once it has ended the hold (see Mutex.release).

// maxSpareRounds bounds the spare rounds a Client keeps: a burst of more
// operations at once than that lends rounds made for it, and drops them
// after.
const maxSpareRounds = 1024

// lentRounds are the rounds a Mutex borrows: the round of its acquisition
// and release, and the commit round of a fenced acquisition, which shares
// the round's command and keeps a tally of its own.
type lentRounds struct {
	round, commit *nodeRound
	// candidates are the keys of the commands whose row says candidates:
	// the slots a Semaphore's one-round acquisition tries (attemptOneOf),
	// and with fencing, their counters' keys.
	candidates, candidateFences []string
	remainingTTLs               []int64 // scratch of resume
}

// roundLender lends the rounds of a Client's Mutexes.
type roundLender struct {
	client *Client
	mu     sync.Mutex
	spare  []*lentRounds // guarded by mu
}

// lend returns rounds for one operation, their tallies counting nothing:
// nothing of their last borrower's shows.
func (l *roundLender) lend() *lentRounds {
	l.mu.Lock()
	n := len(l.spare)
	if n == 0 {
		l.mu.Unlock()
		return l.newRounds()
	}
	rounds := l.spare[n-1]
	l.spare[n-1] = nil
	l.spare = l.spare[:n-1]
	l.mu.Unlock()
	need := l.client.need
	rounds.round.tally.reset(nodeAcquire, need)
	rounds.commit.tally.reset(nodeCommitFence, need)
	return rounds
}

// giveBack keeps rounds for the next operation, up to maxSpareRounds.
func (l *roundLender) giveBack(rounds *lentRounds) {
	rounds.candidates, rounds.candidateFences = nil, nil
	l.mu.Lock()
	if len(l.spare) < maxSpareRounds {
		l.spare = append(l.spare, rounds)
	}
	l.mu.Unlock()
}

// newRounds makes rounds over the Client's nodes.
func (l *roundLender) newRounds() *lentRounds {
	c := l.client
	round := c.newNodeRound()
	// Every node sees this client's acquisitions and releases in one
	// order: a release and an attempt, or two attempts, racing on one key
	// cannot split the nodes between them.
	round.round.Ordered = true
	commit := &nodeRound{round: round.round}
	commit.tally.nodes = make([]nodeOutcome, c.group.Len())
	commit.tally.quarantine = c.quarantine
	commit.tally.reset(nodeCommitFence, c.need)
	round.tally.reset(nodeAcquire, c.need)
	return &lentRounds{round: round, commit: commit}
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
		a.lent = m.client.rounds.lend()
	}
	return a.lent
}

// giveBackRounds gives the Mutex's rounds back to the Client, if it has
// any: nothing of them may be read afterwards. The caller owns the
// acquisition.
func (m *Mutex) giveBackRounds() {
	a := &m.acquisition
	if a.lent != nil {
		m.client.rounds.giveBack(a.lent)
		a.lent = nil
	}
}
