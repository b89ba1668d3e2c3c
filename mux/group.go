package mux

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/resp"
)

// ErrNoNodes is returned by New for an empty address list.
var ErrNoNodes = errors.New("mux: no addresses")

// Group is a set of connections, one to each of N independent servers.
//
// A Group is safe for concurrent use.
type Group struct {
	nodes []*conn.Conn
	// ordering serializes the sending of ordered rounds (Round.Ordered).
	ordering sync.Mutex
}

// New returns a Group with one connection per address, in the forms
// conn.ParseAddress accepts, all configured with options. It does not dial;
// see Connect.
func New(addresses []string, options conn.Options) (*Group, error) {
	if len(addresses) == 0 {
		return nil, ErrNoNodes
	}
	g := &Group{nodes: make([]*conn.Conn, 0, len(addresses))}
	for _, address := range addresses {
		node, err := conn.New(address, options)
		if err != nil {
			return nil, fmt.Errorf("mux: node %d: %w", len(g.nodes), err)
		}
		g.nodes = append(g.nodes, node)
	}
	return g, nil
}

// Len returns the number of servers.
func (g *Group) Len() int { return len(g.nodes) }

// Node returns the connection to the i-th server, for commands that are
// not fanned out.
func (g *Group) Node(i int) *conn.Conn { return g.nodes[i] }

// Connect dials every server at once and waits for all the dials. It
// returns one error per server, nil where the dial succeeded; servers that
// fail keep being dialled on use.
func (g *Group) Connect(ctx context.Context) []error {
	errs := make([]error, len(g.nodes))
	var wait sync.WaitGroup
	for i, node := range g.nodes {
		wait.Go(func() { errs[i] = node.Connect(ctx) })
	}
	wait.Wait()
	return errs
}

// NewRound returns a Round sized for this Group.
func (g *Group) NewRound() *Round {
	return &Round{Calls: make([]conn.Call, len(g.nodes)), gathered: make([]bool, len(g.nodes))}
}

// Send writes the command of each of the round's calls to its server. The
// replies are due by deadline. Send does not wait for any reply.
//
// When connections are busy with other callers' commands, Send yields the
// processor once before it writes, so that callers that are ready to send
// too add their commands to the same writes.
//
// A call whose Command is empty is not sent: its server is left out of the
// round, and Wait does not wait for it.
func (g *Group) Send(round *Round, deadline time.Time) {
	buffered := false
	ordered := round.Ordered && len(g.nodes) > 1
	if ordered {
		g.ordering.Lock()
	}
	for i, node := range g.nodes {
		round.gathered[i] = false
		call := &round.Calls[i]
		if len(call.Command) == 0 {
			call.Reply, call.Err, call.Latency = resp.Value{}, nil, 0
			continue
		}
		if node.Send(call, deadline) {
			buffered = true
		}
	}
	if ordered {
		g.ordering.Unlock()
	}
	if !buffered {
		return
	}
	runtime.Gosched()
	for _, node := range g.nodes {
		node.Flush()
	}
}

// Wait gathers the replies of a round that was sent. After each reply or
// failure it asks tally, when not nil, whether the outcome is decided; if
// so, it abandons the calls still in flight (their Abandoned method then
// reports true) and returns nil. When ctx ends first, it abandons the calls
// still in flight and returns ctx's error: the replies already gathered
// stay in their calls. Abandoning a call costs its connection nothing, and
// a carried call (conn.Call.Carry) is still finished by its connection.
//
// Replies are gathered from the connected servers first, in the Group's
// order, then from the servers being dialled again: they were all requested
// at once, so the round lasts as long as its slowest server, not the sum,
// and a server that is down costs nothing once the tally is decided.
func (g *Group) Wait(ctx context.Context, round *Round, tally Tally) error {
	// Pass 0 takes the connected servers, pass 1 those being dialled
	// again, pass 2 any that came up or went down during the round and so
	// was skipped by both.
	for pass := range 3 {
		for i, node := range g.nodes {
			call := &round.Calls[i]
			if len(call.Command) == 0 || round.gathered[i] || (pass < 2 && node.Connected() != (pass == 0)) {
				continue
			}
			node.Wait(ctx, call)
			if call.Abandoned() {
				g.Discard(round)
				return call.Err
			}
			round.gathered[i] = true
			if tally != nil && tally.Count(i, call) {
				g.Discard(round)
				return nil
			}
		}
	}
	return nil
}

// Discard stops waiting for every call of a round that was sent. It takes
// the replies that have already arrived (see conn.Conn.Collect), without
// counting them; the others are read and dropped in order by the next
// reader of each connection. It serves commands whose effect matters but
// whose answer does not, such as the clean-up after a failed lock attempt,
// and the calls left when a round was decided early.
func (g *Group) Discard(round *Round) {
	for i, node := range g.nodes {
		if call := &round.Calls[i]; len(call.Command) != 0 && !round.gathered[i] && !node.Collect(call) {
			node.Abandon(call)
		}
	}
}

// Close closes every connection, each after waiting a bounded time for
// its carried calls (see conn.Conn.Close). It returns the connections'
// errors joined: one matching conn.ErrUnfinished for each server where
// carried calls could not be finished.
func (g *Group) Close() error {
	errs := make([]error, len(g.nodes))
	var wait sync.WaitGroup
	for i, node := range g.nodes {
		wait.Go(func() { errs[i] = node.Close() })
	}
	wait.Wait()
	return errors.Join(errs...)
}

// Round is one command sent to every server of a Group and its replies. It
// is reused from round to round.
//
// A Round is not safe for concurrent use.
type Round struct {
	// Calls holds one call per server, in the Group's order.
	Calls []conn.Call

	// Ordered makes Send queue the round's commands on every server before
	// any other ordered round of the Group can queue its own: each server
	// then receives the ordered rounds in the same order. Two lock attempts
	// of one client on one key, racing, get the same answer from every
	// server instead of splitting the servers between them (a split vote
	// costs both a backoff). Rounds whose order does not matter leave it
	// unset and never wait for each other.
	Ordered bool

	// gathered marks the calls whose outcome Wait has taken.
	gathered []bool
}

// SetAll makes every call's command a copy of the first call's.
func (r *Round) SetAll() {
	for i := 1; i < len(r.Calls); i++ {
		r.Calls[i].CopyCommand(&r.Calls[0])
	}
}

// Tally counts the replies of a round as they are gathered.
type Tally interface {
	// Count takes the outcome of node i and reports whether the round's
	// outcome is decided, so that the remaining replies need not be
	// awaited.
	Count(node int, call *conn.Call) (decided bool)
}
