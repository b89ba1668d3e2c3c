package mux

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/mux/internal/cluster"
	"github.com/lockmux/lockmux/resp"
)

// Group is a set of connections, one to each of N independent servers.
//
// A Group is safe for concurrent use.
type Group struct {
	nodes         []node
	dialAddresses []string // as given to New, for the Subscriber's connections
	options       Options
	// ordering serializes the sending of ordered rounds (Round.Ordered).
	ordering sync.Mutex
}

// New returns a Group with one connection per address, in the forms
// ParseAddress accepts, all configured with options. It does not dial: the
// connections dial when first used, or at Connect.
func New(addresses []string, options Options) (*Group, error) {
	if len(addresses) == 0 {
		return nil, ErrNoNodes
	}
	options = options.withDefaults()
	g := &Group{nodes: make([]node, 0, len(addresses)), dialAddresses: append([]string(nil), addresses...), options: options}
	for i, address := range addresses {
		node, err := newNode(i, address, options)
		if err != nil {
			return nil, fmt.Errorf("mux: node %d: %w", len(g.nodes), err)
		}
		g.nodes = append(g.nodes, node)
	}
	return g, nil
}

// Len returns the number of servers.
func (g *Group) Len() int { return len(g.nodes) }

// Address returns the i-th server's address, without its password.
func (g *Group) Address(i int) string { return g.nodes[i].Address() }

// Username returns the user the connection to the i-th server
// authenticates as: "default" when it gives none.
func (g *Group) Username(i int) string { return g.nodes[i].Username() }

// FsyncAlways reports whether server i, at its last connection, ran with
// appendfsync always (see conn.Conn.FsyncAlways; Options.AskPersistence).
func (g *Group) FsyncAlways(i int) bool { return g.nodes[i].FsyncAlways() }

// ServedBySentinel reports whether server i is a master that Redis
// Sentinel serves, which a failover can replace (see conn.ParseAddress).
func (g *Group) ServedBySentinel(i int) bool { return g.nodes[i].ServedBySentinel() }

// AskSentinels asks the sentinels of server i, a master that Redis
// Sentinel serves, where it is and whether they have their quorum (see
// conn.Conn.AskSentinels); nil for any other server.
func (g *Group) AskSentinels(ctx context.Context, i int) []SentinelReport {
	return g.nodes[i].AskSentinels(ctx)
}

// IsCluster reports whether server i is a Redis Cluster (see
// conn.ParseAddress): its commands go to the masters of their keys' slots.
func (g *Group) IsCluster(i int) bool {
	_, ok := g.nodes[i].(*cluster.Cluster)
	return ok
}

// MasterTags returns, for a node that is a Redis Cluster, one hash tag
// per master that its slot map knows, such that a key holding "{tag}"
// goes to that master, reading the map first if it was not yet; nil for
// any other node. It fails when the map cannot be read.
func (g *Group) MasterTags(ctx context.Context, i int) ([]string, error) {
	clustered, ok := g.nodes[i].(*cluster.Cluster)
	if !ok {
		return nil, nil
	}
	return clustered.MasterTags(ctx)
}

// Asked reports whether node's command in round, on a Redis
// Cluster, was answered by the master that an ASK redirect pointed
// to: the command's slot is being migrated there. Until the migration
// ends, the slot's sharded channels are still served by the master it
// leaves, where their subscribers listen, so what the command published
// reached none of them. It is false for any other node.
func (g *Group) Asked(round *Round, node int) bool {
	clustered, ok := g.nodes[node].(*cluster.Cluster)
	return ok && clustered.Asked(&round.calls[node])
}

// SentinelReport is what one sentinel says of its master: conn's type,
// re-exported.
type SentinelReport = conn.SentinelReport

// Connected reports whether the connection to the i-th server is up, as a
// hint that may be stale at once.
func (g *Group) Connected(i int) bool { return g.nodes[i].Connected() }

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

// ConnectAtLeast dials every server that is not connected, like Connect,
// but returns as soon as n servers are connected, every dial has ended, or
// ctx ends, and reports how many are connected. The dials it did not wait
// for go on in the background: a server that stalls costs a caller that
// needs only some of them nothing.
func (g *Group) ConnectAtLeast(ctx context.Context, n int) int {
	ctx, cancel := context.WithCancel(ctx)
	results := make(chan error, len(g.nodes))
	var wait sync.WaitGroup
	for _, node := range g.nodes {
		wait.Go(func() { results <- node.Connect(ctx) })
	}
	connected := 0
	for range g.nodes {
		if <-results == nil {
			connected++
		}
		if connected >= n {
			break
		}
	}
	cancel() // the Connects still waiting return at once
	wait.Wait()
	return connected
}

// Send writes the round's command to each of its servers, but those left
// out with Round.Skip, which it then forgets. The replies are due by
// deadline, the servers' deadline: a server that has not answered by then
// while a caller waits fails its connection. Send does not wait for any
// reply.
//
// When connections are busy with other callers' commands, Send yields the
// processor once before it writes, so that callers that are ready to send
// too add their commands to the same writes.
func (g *Group) Send(round *Round, deadline time.Time) {
	if !g.queue(round, deadline, true) {
		return
	}
	runtime.Gosched()
	g.Flush()
	for _, l := range round.trackedOn {
		if l != nil {
			l.conn.Flush()
		}
	}
}

// Queue is Send without its write: it queues the round's command on each
// of its servers and reports whether a command waits in a buffer, which
// Flush (Subscriber.Flush for a tracked round), or the next Wait,
// writes. Queuing many rounds and then flushing
// once writes their commands to each server in one system call, with
// their follow-ups (Round.FollowUp).
func (g *Group) Queue(round *Round, deadline time.Time) (buffered bool) {
	return g.queue(round, deadline, false)
}

// queue is Queue; with send, a command, followed up or not, is written at
// once unless its connection is busy, as conn.Conn.Send writes one.
func (g *Group) queue(round *Round, deadline time.Time, send bool) (buffered bool) {
	ordered := round.Ordered && len(g.nodes) > 1
	if ordered {
		g.ordering.Lock()
	}
	tracker := round.tracker
	round.tracker, round.deadline = nil, deadline
	for i, node := range g.nodes {
		round.gathered[i], round.followed[i] = false, false
		if round.trackedOn != nil {
			round.trackedOn[i] = nil
		}
		call := &round.calls[i]
		if round.skip[i] {
			round.skip[i] = false
			call.Reset()
			call.Reply, call.Err, call.Latency = resp.Value{}, nil, 0
			continue
		}
		call.CopyCommand(&round.call)
		if tracker != nil {
			if l := tracker.trackRound(i, call, round.trackTag, round.trackKeys); l != nil {
				round.trackedOn[i], node = l, l.conn
			}
		}
		if round.FollowUp && round.followUp != nil {
			follow := &round.followUpCalls[i]
			switch typed := node.(type) {
			case *conn.Conn:
				follow.CopyCommand(round.followUp)
				if typed.QueueFollowed(call, follow, deadline) || !send {
					buffered = true // written by Flush, with the pairs others queue meanwhile
				} else {
					typed.Flush()
				}
				round.followed[i] = true
				continue
			case *cluster.Cluster:
				typed.SendFollowed(call, follow, round.followUpScript, round.followUpKey, deadline)
				round.followed[i] = true
				continue
			}
		}
		if node.Send(call, deadline) {
			buffered = true
		}
	}
	if ordered {
		g.ordering.Unlock()
	}
	return buffered
}

// Flush writes the commands that Queue left in the servers' buffers.
func (g *Group) Flush() {
	for _, node := range g.nodes {
		node.Flush()
	}
}

// Wait gathers the replies of a round that was sent. After each reply or
// failure it asks tally, when not nil, whether the outcome is decided; if
// so, it abandons the calls still in flight (their Abandoned method then
// reports true) and returns nil. When ctx ends first, it abandons them and
// returns ctx's error; the replies already gathered stay in their calls.
// A tracked round (Round.TrackOn) is decided when every reply came, or
// shortly before its deadline.
// Abandoning a call costs its connection nothing, and a carried call
// (conn.Call.Carry) is still finished by its connection.
func (g *Group) Wait(ctx context.Context, round *Round, tally Tally) error {
	// Replies are gathered from the connected servers first, in the Group's
	// order, then from the servers being dialled: they were all requested at
	// once, so the round lasts as long as its slowest server, not the sum, and
	// a server that is down costs nothing once the tally is decided. Before
	// each wait for a server being dialled, a server whose dial completed
	// meanwhile is taken first: a quorum of quick servers decides the round
	// without waiting for a slow dial.
	for {
		i := g.nextToGather(round)
		if i < 0 {
			return nil
		}
		if abandoned := g.gatherOne(ctx, round, i); abandoned != nil {
			g.Discard(round)
			return abandoned.Err
		}
		if tally != nil && tally.Count(i, round) {
			if round.tracked() {
				g.gatherLate(ctx, round, tally)
			}
			g.Discard(round)
			return nil
		}
	}
}

// gatherOne waits for server i's reply in round, and for its follow-up's.
// It returns the call it abandoned when ctx ended first, nil otherwise.
func (g *Group) gatherOne(ctx context.Context, round *Round, i int) *conn.Call {
	call := &round.calls[i]
	g.sendsOn(round, i).Wait(ctx, call)
	if call.Abandoned() {
		return call
	}
	if round.followed[i] {
		// A follow-up is waited for where it was sent: on a Redis
		// Cluster, a redirect would read another master.
		follow := &round.followUpCalls[i]
		if sentOn := follow.SentOn(); sentOn != nil {
			sentOn.Wait(ctx, follow)
		}
		if follow.Abandoned() {
			return follow
		}
	}
	round.gathered[i] = true
	return nil
}

// gatherLate gathers and counts the replies of a tracked round that
// come after its tally decided (see Round.TrackOn), until shortly before
// its deadline: a wait past the deadline would fail the subscription
// connection of a late server, whose reply is left instead.
func (g *Group) gatherLate(ctx context.Context, round *Round, tally Tally) {
	late := ctx
	var cancel context.CancelFunc
	for {
		i := g.nextToGather(round)
		if i < 0 {
			break
		}
		if cancel == nil && !g.sendsOn(round, i).Collect(&round.calls[i]) {
			late, cancel = context.WithDeadline(ctx, g.lateUntil(round))
		}
		if g.gatherOne(late, round, i) != nil {
			break
		}
		tally.Count(i, round)
	}
	if cancel != nil {
		cancel()
	}
}

// lateUntil returns when gatherLate leaves the replies still awaited: a
// tenth of the time left before the round's deadline, from now.
func (g *Group) lateUntil(round *Round) time.Time {
	now := time.Now()
	deadline := round.deadline
	if deadline.IsZero() {
		deadline = now.Add(g.options.RequestTimeout)
	}
	return deadline.Add(-deadline.Sub(now) / 10)
}

// nextToGather returns the server whose outcome Wait takes next: the
// first connected one not gathered yet, or else the first one being
// dialled; -1 when every server sent the command was gathered.
func (g *Group) nextToGather(round *Round) int {
	next := -1
	for i := range g.nodes {
		if len(round.calls[i].Command) == 0 || round.gathered[i] {
			continue
		}
		if g.sendsOn(round, i).Connected() {
			return i
		}
		if next < 0 {
			next = i
		}
	}
	return next
}

// Discard stops waiting for every call of a round that was sent. It takes
// the replies that have already arrived (see conn.Conn.Collect), without
// counting them; the others are read and dropped in order by the next
// reader of each connection. It serves commands whose effect matters but
// whose answer does not, such as the clean-up after a failed lock attempt,
// and the calls left when a round was decided early.
func (g *Group) Discard(round *Round) {
	for i := range g.nodes {
		if round.gathered[i] {
			continue
		}
		node := g.sendsOn(round, i)
		if call := &round.calls[i]; len(call.Command) != 0 && !node.Collect(call) {
			node.Abandon(call)
		}
		if round.followed[i] {
			if follow := &round.followUpCalls[i]; !node.Collect(follow) {
				node.Abandon(follow)
			}
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
