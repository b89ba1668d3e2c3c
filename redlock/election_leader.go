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
	// TTL is how long the leader's key had left on a quorum.
	TTL time.Duration
	// token tells two leaderships apart before the second term commits.
	token string
}

// nodeView is one node's answer to the read of an election's keys.
type nodeView struct {
	answered bool
	value    []byte        // the lock key's value, nil when missing
	ttl      time.Duration // its remaining TTL
	counter  int64         // the fencing counter, 0 when missing
}

// readView reads watchLua's reply; a malformed one counts as no answer.
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

// leaderOf returns the value need views hold, with their largest counter
// as its term and a quorum's TTL. It reports false without a quorum.
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

// Leader returns who leads the election on a quorum, and its term. It
// fails with ErrNoLeader when nobody leads, and with a *QuorumError when
// too few nodes answered. A new leader's term may show its predecessor's
// until committed.
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

// read reads the election's keys on every node at once.
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
