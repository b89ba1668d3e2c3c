package round

import (
	"context"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
)

// IdentityLength is the length of a release's identity.
const IdentityLength = 16

// Round is one round of a lock: one command of the protocol table for
// every node, and the count of their replies. Start writes the command,
// Post or Queue sends it and Gather counts the replies; Send leaves them
// to the transport. A Round belongs to one goroutine at a time.
type Round struct {
	Mux     *mux.Round
	Command Command // the command written last
	Tally   Tally
	// Lock is the lock the next command is written for.
	Lock Lock
	// Candidates are the keys of the commands whose row says candidates:
	// a Semaphore's slots, and with fencing, their counters' keys.
	Candidates, CandidateFences []string
	// Identity is the identity of the release the round sends: a field,
	// so that passing it to the rows allocates nothing.
	Identity [IdentityLength]byte
}

// Lock describes the lock a command is written for.
type Lock struct {
	Kind       Kind
	Keys       []string // the lock key, then the others
	FenceKeys  []string // the keys' fencing counters; nil without fencing
	Guards     []string // the keys a fair or read/write lock checks
	AnnounceOn string   // the prefix of the release channels; "": none
	// Extras are the acquisition's extra arguments. Only the rows that
	// take them read them, on the acquisition's goroutine.
	Extras *[][]byte
}

// New returns a round over group's nodes. The quarantine q judges its
// votes; nil judges none.
func New(group *mux.Group, q *quarantine.Quarantine) *Round {
	r := &Round{Mux: group.NewRound()}
	r.Tally.Nodes = make([]NodeOutcome, group.Len())
	r.Tally.quarantine = q
	if q != nil {
		r.Mux.SetFollowUp(quarantine.MarkerScript, quarantine.EpochKey) // a vote's node must still hold its marker (Quarantine.Judge)
	}
	return r
}

// Start writes command, as the lock's kind maps it (commandsOf), for
// every node: the keys and arguments its row gives, around the token.
// The nodes skipped (mux.Round.Skip) stay skipped. It reports whether
// the command is a release the transport must carry (mux.Round.Carry).
func (r *Round) Start(command Command, token []byte, number int64, identity []byte) (carried bool) {
	command = commandsOf[r.Lock.Kind][command]
	row := &commandTable[command]
	r.Command = command
	r.Mux.FollowUp = r.Tally.quarantine != nil && row.counting == votesCount
	keys := row.keys(r)
	r.Tally.keys = keys.counted
	if row.script == nil {
		r.Mux.StartCommand(6, "SET")
		r.Mux.AppendString(r.Lock.Keys[0])
		r.Mux.AppendBulk(token)
		r.Mux.AppendString("NX")
		r.Mux.AppendString("PX")
		r.Mux.AppendInt(number)
	} else {
		arguments := row.arguments(r, number, identity)
		if row.bySHA() {
			r.Mux.SetScript(row.script, keys.count(), arguments.count())
		} else {
			r.Mux.SetEval(row.script, keys.count(), arguments.count())
		}
		keys.appendTo(r.Mux)
		r.Mux.AppendBulk(token)
		arguments.appendTo(r.Mux)
	}
	switch row.dispatch {
	case sentCarried:
		return true
	case sentDelivered:
		r.Mux.Deliver()
	}
	return false
}

// Post sends the command to every node not skipped, its replies due by
// deadline, and makes the tally ready to count them: need must confirm.
func (r *Round) Post(group *mux.Group, need int, deadline time.Time) {
	r.Tally.Reset(r.Command, need)
	group.Send(r.Mux, deadline)
}

// Queue is Post without the write: the command waits in the connections'
// buffers until the caller flushes them (mux.Group.Flush), or a wait for
// a reply does.
func (r *Round) Queue(group *mux.Group, need int, deadline time.Time) {
	r.Tally.Reset(r.Command, need)
	group.Queue(r.Mux, deadline)
}

// Gather counts the replies of a round Post sent until the round is
// decided, the deadline passes, or ctx ends; then the error is ctx's.
func (r *Round) Gather(ctx context.Context, group *mux.Group) error {
	return group.Wait(ctx, r.Mux, &r.Tally)
}

// Send sends the command to every node not skipped without waiting for
// the replies: the transport reads them, and finishes a carried release.
func (r *Round) Send(group *mux.Group, deadline time.Time) {
	group.Send(r.Mux, deadline)
	group.Discard(r.Mux)
}
