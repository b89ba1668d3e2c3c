package redlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/resp"
)

// ElectionOptions configures an Election. The zero value is usable.
type ElectionOptions struct {
	// TTL is how long the leader's key lives unless renewed. Zero means
	// DefaultTTL (10 s); the rules of MutexOptions.TTL with AutoExtend
	// apply.
	TTL time.Duration

	// MaxTerm bounds one leadership, which then ends as a lost one does.
	// Zero means DefaultMaxHold (1 hour).
	MaxTerm time.Duration
}

// Election elects one leader among the candidates that campaign under one
// name. A leadership is a renewed, fenced hold of the lock named after the
// election. An Election is safe for concurrent use (docs/election.md).
type Election struct {
	client  *Client
	name    string
	options ElectionOptions
}

// NewElection returns the Election whose leader holds the key name.
func (c *Client) NewElection(name string, options ElectionOptions) *Election {
	return &Election{client: c, name: name, options: options}
}

// Name returns the Election's name, the key of its lock on the nodes.
func (e *Election) Name() string { return e.name }

// Leadership is one term of a leader, from Campaign to Resign or loss. It
// is safe for concurrent use.
type Leadership struct {
	election   *Election
	mutex      *Mutex // this leadership's own: it is never locked again
	generation uint64
	value      string
	term       int64
}

// Campaign waits until this candidate leads with value, at most 256 bytes
// of printable ASCII. It fails only when ctx ends, the Client is closed,
// the options or value are invalid, or with ErrQuorumUnreachable.
func (e *Election) Campaign(ctx context.Context, value string) (*Leadership, error) {
	return e.campaign(ctx, value, nil)
}

// campaign is Campaign; the leadership calls onLost, if set, at its loss.
func (e *Election) campaign(ctx context.Context, value string, onLost func(cause error)) (*Leadership, error) {
	m := e.client.NewMutex(e.name, MutexOptions{TTL: e.options.TTL, MaxHold: e.options.MaxTerm,
		AutoExtend: true, Fencing: true, Metadata: value})
	if m.err != nil {
		return nil, fmt.Errorf("redlock: election %q: %w", e.name, m.err)
	}
	m.hold.Mu.Lock()
	m.hold.OnLost = onLost // set before the hold starts, so that no loss goes unseen
	m.hold.Mu.Unlock()
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	h := &m.hold
	h.Mu.Lock()
	l := &Leadership{election: e, mutex: m, generation: h.Generation, value: value, term: h.Fence}
	h.Mu.Unlock()
	return l, nil
}

// Value returns the value the leader campaigned with.
func (l *Leadership) Value() string { return l.value }

// Term returns the leadership's term, the fence of its hold: larger than
// every earlier leader's.
func (l *Leadership) Term() int64 { return l.term }

// Until returns the end of the leadership's validity, or the zero time
// once it has ended.
func (l *Leadership) Until() time.Time { return l.mutex.hold.UntilOf(l.generation) }

// Done returns a channel closed when the leadership ends, before another
// candidate can lead: as Mutex.Done closes.
func (l *Leadership) Done() <-chan struct{} { return l.mutex.doneByClock(l.generation) }

// Resign releases the leadership at once. It fails with ErrLockLost when
// it had already ended, and with ErrNotHeld when resigned before.
func (l *Leadership) Resign(ctx context.Context) error {
	return l.mutex.release(ctx, l.generation)
}

// Run campaigns, calls lead while leading, and campaigns again after a
// loss, until ctx ends. lead's context is cancelled with ErrLockLost when
// the leadership ends. If lead returns while leading, Run resigns and
// returns its error. A quorum out of reach is waited out.
func (e *Election) Run(ctx context.Context, value string, lead func(ctx context.Context, l *Leadership) error) error {
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		leadCtx, cancel := context.WithCancelCause(ctx)
		l, err := e.campaign(ctx, value, cancel)
		if errors.Is(err, ErrQuorumUnreachable) && ctx.Err() == nil {
			cancel(nil)
			retry.Reset(e.client.options.RetryDelayMax)
			select {
			case <-retry.C:
				continue
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-e.client.closing:
				return ErrClosed
			}
		}
		if err != nil {
			cancel(nil)
			return err
		}
		leadErr := lead(leadCtx, l)
		lost := isClosed(l.Done())
		cancel(nil)
		resignCtx, cancelResign := context.WithTimeout(context.WithoutCancel(ctx), e.client.unlockTimeout())
		resignErr := l.Resign(resignCtx)
		cancelResign()
		if !lost {
			return errors.Join(leadErr, resignErr)
		}
		if ctx.Err() != nil {
			return errors.Join(leadErr, context.Cause(ctx))
		}
	}
}

// isClosed reports whether done is closed.
func isClosed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

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
