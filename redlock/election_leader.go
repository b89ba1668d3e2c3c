package redlock

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/resp"
)

// Leader is who leads an Election, as a quorum of nodes answered.
type Leader struct {
	// Value is the value the leader campaigned with.
	Value string
	// Term is the leader's term, its hold's fence.
	Term int64
	// TTL is how long the leader's key had left on a quorum of the nodes
	// when they answered, unless renewed.
	TTL time.Duration
	// token is the leader's hold's token: it tells two leaderships apart
	// while the term of the second is not yet committed.
	token string
}

// nodeView is what one node answered to the read of an election's keys
// (watchLua over the lock key and its fencing counter).
type nodeView struct {
	answered bool
	value    []byte        // the lock key's value, nil when missing
	ttl      time.Duration // its remaining TTL
	counter  int64         // the fencing counter, 0 when missing
}

// readView reads reply, an answer of watchLua over the lock key and its
// counter. A reply of another shape, or a counter that is not a decimal
// number, counts as no answer.
func readView(reply resp.Value) nodeView {
	if reply.Type != resp.TypeArray || len(reply.Elems) != 4 {
		return nodeView{}
	}
	view := nodeView{answered: true}
	if value := reply.Elems[0]; !value.Null && len(value.Str) > 0 {
		view.value = bytes.Clone(value.Str)
		view.ttl = time.Duration(reply.Elems[1].Int) * time.Millisecond
	}
	if counter := reply.Elems[2]; !counter.Null {
		n, ok := protocol.ParseCounter(counter.Str)
		if !ok {
			return nodeView{}
		}
		view.counter = n
	}
	return view
}

// leaderOf returns the leader that a quorum of views shows: the value that
// need nodes hold, with the largest counter among them as its term (a
// node holding it saw no later commit), and the shortest TTL of the
// quorum as its expiry. It reports false when no value has a quorum.
func leaderOf(views []nodeView, need int) (Leader, bool) {
	for i, view := range views {
		if view.value == nil {
			continue
		}
		holders, term, ttls := 0, int64(0), make([]time.Duration, 0, len(views))
		for _, other := range views[i:] {
			if bytes.Equal(other.value, view.value) {
				holders++
				term = max(term, other.counter)
				ttls = append(ttls, other.ttl)
			}
		}
		if holders < need {
			continue
		}
		// The need-th longest TTL: the key lives on a quorum that long.
		slices.Sort(ttls)
		token, value := splitValue(view.value)
		return Leader{Value: string(value), Term: term, TTL: ttls[len(ttls)-need], token: string(token)}, true
	}
	return Leader{}, false
}

// Leader returns who leads the election, as a quorum of nodes answers: the
// value a quorum holds, and its term. It fails with ErrNoLeader when no
// candidate leads, and with a *QuorumError when too few nodes answered
// within Options.NodeTimeout. The term of a leader whose Campaign has not
// returned yet may be its predecessor's until its fence is committed.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	c := e.client
	if err := c.usable(); err != nil {
		return Leader{}, err
	}
	views, err := e.read(ctx)
	if err != nil {
		return Leader{}, err
	}
	answered := 0
	for _, view := range views {
		if view.answered {
			answered++
		}
	}
	if answered < c.need {
		return Leader{}, fmt.Errorf("redlock: election %q: %w", e.name,
			&QuorumError{Key: e.name, Got: answered, Need: c.need, Unreachable: true})
	}
	if leader, ok := leaderOf(views, c.need); ok {
		return leader, nil
	}
	return Leader{}, fmt.Errorf("redlock: election %q: %w", e.name, ErrNoLeader)
}

// read reads the election's lock key and counter on every node at once,
// and returns each node's answer, waiting at most Options.NodeTimeout.
func (e *Election) read(ctx context.Context) ([]nodeView, error) {
	c := e.client
	round := c.group.NewRound()
	round.SetEval(watchLua, 2, 0)
	round.AppendString(e.name)
	round.AppendString(e.name + fenceKeySuffix)
	c.group.Send(round, time.Now().Add(c.options.NodeTimeout))
	if err := c.group.Wait(ctx, round, nil); err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("redlock: election %q: %w", e.name, context.Cause(ctx))
	}
	views := make([]nodeView, c.group.Len())
	for node := range views {
		if round.Err(node) == nil {
			views[node] = readView(round.Reply(node))
		}
	}
	return views, nil
}
