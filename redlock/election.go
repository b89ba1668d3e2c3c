package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"
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
