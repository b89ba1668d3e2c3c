package round

import (
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/redlock/internal/spare"
)

// Rounds are the rounds a lock borrows: the round of its acquisition and
// release, and the commit round of a fenced acquisition, which shares the
// round's command and keeps a tally of its own.
type Rounds struct {
	Round, Commit *Round
	RemainingTTLs []int64 // scratch of a resumption
}

// Lender lends the rounds of a Client's locks while their acquisition or
// release runs: an idle lock keeps none. Init it before use.
type Lender struct {
	group      *mux.Group
	need       int
	quarantine *quarantine.Quarantine
	spare      spare.List[Rounds]
}

// Init makes l lend rounds over group's nodes, of which need must
// confirm, their votes judged by q (nil: none).
func (l *Lender) Init(group *mux.Group, need int, q *quarantine.Quarantine) {
	l.group, l.need, l.quarantine = group, need, q
}

// Lend returns rounds for one operation, their tallies counting nothing:
// nothing of their last borrower's shows.
func (l *Lender) Lend() *Rounds {
	rounds := l.spare.Take()
	if rounds == nil {
		return l.newRounds()
	}
	rounds.Round.Tally.Reset(Acquire, l.need)
	rounds.Commit.Tally.Reset(CommitFence, l.need)
	return rounds
}

// GiveBack keeps rounds for the next operation (see spare.List).
func (l *Lender) GiveBack(rounds *Rounds) {
	rounds.Round.Candidates, rounds.Round.CandidateFences = nil, nil
	rounds.Round.Lock, rounds.Commit.Lock = Lock{}, Lock{}
	l.spare.Put(rounds)
}

// newRounds makes rounds over the Lender's nodes.
func (l *Lender) newRounds() *Rounds {
	round := New(l.group, l.quarantine)
	// Every node sees this client's acquisitions and releases in one
	// order: a release and an attempt, or two attempts, racing on one key
	// cannot split the nodes between them.
	round.Mux.Ordered = true
	commit := &Round{Mux: round.Mux}
	commit.Tally.Nodes = make([]NodeOutcome, l.group.Len())
	commit.Tally.quarantine = l.quarantine
	commit.Tally.Reset(CommitFence, l.need)
	round.Tally.Reset(Acquire, l.need)
	return &Rounds{Round: round, Commit: commit}
}
