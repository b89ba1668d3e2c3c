package mux

import (
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/resp"
)

// Round is one command sent to every server of a Group, and each server's
// outcome. Build the command with the methods of its command (StartCommand,
// SetScript, AppendString, …), leave servers out with Skip, then give it to
// Group.Send and Group.Wait. It is reused from round to round, without
// allocating.
//
// A Round is not safe for concurrent use.
type Round struct {
	command

	// Ordered makes Send queue the round's command on every server before
	// any other ordered round of the Group can queue its own: each server
	// then receives the ordered rounds in the same order. Two lock attempts
	// of one client on one key, racing, get the same answer from every
	// server instead of splitting the servers between them (a split vote
	// costs both a backoff). Rounds whose order does not matter leave it
	// unset and never wait for each other.
	Ordered bool

	// FollowUp makes Send send the command of SetFollowUp to each server
	// behind the round's own, on the same connection: its reply tells what
	// the server held after it ran the round's command. Rounds whose equal
	// follow-ups wait for the same write share one (see
	// conn.Conn.QueueFollowed).
	FollowUp bool

	calls    []conn.Call // one per server, in the Group's order
	skip     []bool      // servers left out of the next Send
	gathered []bool      // the calls whose outcome Wait has taken

	// followUp is the command of SetFollowUp, and followUpCalls its
	// calls, one per server, sent when followed[i]; both nil until
	// SetFollowUp, so that a Round without one costs no memory for it.
	followUp      *conn.Call
	followUpCalls []conn.Call
	followed      []bool // the servers sent the follow-up in the last Send
	// followUpScript and followUpKey are SetFollowUp's, for the Redis
	// Cluster nodes, whose follow-up's key depends on the master.
	followUpScript *conn.Script
	followUpKey    string

	// tracker, trackTag and trackKeys are TrackOn's, for the next Send;
	// trackedOn is, per server, the subscription connection the last Send
	// went over instead of the server's own, nil until TrackOn.
	tracker   *Subscriber
	trackTag  uint64
	trackKeys []string
	trackedOn []*link
	// deadline is the last Send's, for the late replies of a tracked
	// round (see Group.gatherLate).
	deadline time.Time
}

// NewRound returns a Round sized for this Group.
func (g *Group) NewRound() *Round {
	n := len(g.nodes)
	return &Round{calls: make([]conn.Call, n), skip: make([]bool, n), gathered: make([]bool, n), followed: make([]bool, n)}
}

// SetFollowUp sets the command that FollowUp sends after the round's own:
// script, called by its SHA1 with key as its one key. On a Redis Cluster
// node, its key is key + ":{tag}", tag being the hash tag of the master
// the round's command went to (see Group.MasterTags): each master answers
// for itself.
func (r *Round) SetFollowUp(script *Script, key string) {
	if r.followUp == nil {
		r.followUp, r.followUpCalls = &conn.Call{}, make([]conn.Call, len(r.calls))
	}
	r.followUp.SetScript(script.script, 1, 0)
	r.followUp.Command = resp.AppendBulkString(r.followUp.Command, key)
	r.followUpScript, r.followUpKey = script.script, key
}

// FollowUpReply returns server node's reply to the follow-up command of
// the last round, whether it was sent, and the transport failure that kept
// the reply from arriving. A server error reply is a Reply of type
// resp.TypeError. On a Redis Cluster, a command that a redirect or
// a TRYAGAIN sends again is followed up again where it goes; when it was
// sent again without its follow-up, the error matches ErrNotFollowed.
func (r *Round) FollowUpReply(node int) (resp.Value, bool, error) {
	if !r.followed[node] {
		return resp.Value{}, false, nil
	}
	follow := &r.followUpCalls[node]
	if r.calls[node].FollowedBy() != follow && follow.Err == nil {
		return resp.Value{}, true, ErrNotFollowed
	}
	return follow.Reply, true, follow.Err
}

// Skip leaves server node out of the next Send: it is not sent the
// command, and Wait does not wait for it.
func (r *Round) Skip(node int) { r.skip[node] = true }

// Sent reports whether server node was sent the command in the last Send.
func (r *Round) Sent(node int) bool { return len(r.calls[node].Command) != 0 }

// Reply returns server node's answer in the last round. A server error
// reply is a Reply of type resp.TypeError, not an Err. It stays valid
// until the Round is sent again.
func (r *Round) Reply(node int) resp.Value { return r.calls[node].Reply }

// Err returns the transport failure that kept server node's reply from
// arriving, or nil. Unless it matches ErrNotConnected (the command was not
// sent), the command may or may not have been applied.
func (r *Round) Err(node int) error { return r.calls[node].Err }

// Latency returns the time from sending the command to server node to its
// reply or failure.
func (r *Round) Latency(node int) time.Duration { return r.calls[node].Latency }

// Server returns the address of the server that answered node's command
// in the last round (conn.Conn.Address): the node's own, or, for a Redis
// Cluster, that of the master the command reached; "" when the
// command was not sent.
func (r *Round) Server(node int) string { return serverOf(&r.calls[node]) }

// serverOf returns the address of the server call was last sent to, ""
// when it was not sent.
func serverOf(call *conn.Call) string {
	if sentOn := call.SentOn(); sentOn != nil {
		return sentOn.Address()
	}
	return ""
}

// Abandoned reports whether Wait stopped waiting for server node's reply:
// the round was decided first, or the caller's context ended. Its outcome
// is unknown.
func (r *Round) Abandoned(node int) bool { return r.calls[node].Abandoned() }

// Tally counts the outcomes of a round as they are gathered.
type Tally interface {
	// Count takes the outcome of server node (see Round.Reply and
	// Round.Err) and reports whether the round's outcome is decided, so
	// that the remaining replies need not be awaited.
	Count(node int, round *Round) (decided bool)
}
