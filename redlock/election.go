package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ElectionOptions configures an Election. The zero value is usable.
type ElectionOptions struct {
	// TTL is how long the leader's key lives on the nodes unless renewed.
	// A leadership is renewed at about a third of it, and ends two
	// Options.NodeTimeout before its validity when it cannot be renewed.
	// Zero means DefaultTTL (10 s); it must last five node timeouts and not
	// exceed Options.MaxTTL.
	TTL time.Duration

	// MaxTerm bounds one leadership: then it ends, as a lost one does, and
	// Run campaigns again. Zero means DefaultMaxHold (1 hour).
	MaxTerm time.Duration
}

// Election elects one leader among the candidates that campaign under one
// name, across the Client's nodes. A leadership is a renewed, fenced hold
// of the lock named after the election: its term is the hold's fence, so
// terms strictly increase from leader to leader, and its value, the
// candidate's, is kept on the nodes with the hold.
//
// An Election is safe for concurrent use. docs/election.md is the guide.
type Election struct {
	client  *Client
	name    string
	options ElectionOptions
}

// NewElection returns the Election called name, whose leader holds the
// lock key name on the nodes.
func (c *Client) NewElection(name string, options ElectionOptions) *Election {
	return &Election{client: c, name: name, options: options}
}

// Name returns the Election's name, the key of its lock on the nodes.
func (e *Election) Name() string { return e.name }

// Leadership is one term of a leader, from the Campaign that won it to its
// Resign or its loss.
//
// A Leadership is safe for concurrent use.
type Leadership struct {
	election   *Election
	mutex      *Mutex // this leadership's own: it is never locked again
	generation uint64
	value      string
	term       int64
}

// Campaign waits until this candidate leads the election with value, at
// most 256 bytes of printable ASCII, and returns its leadership. It fails
// only when ctx ends, the Client is closed, the options or the value are
// not valid, or too many nodes are down for a quorum (ErrQuorumUnreachable).
// While it waits, it is woken by the leader's release and by the expiry
// of its key, as Mutex.Lock is.
func (e *Election) Campaign(ctx context.Context, value string) (*Leadership, error) {
	return e.campaign(ctx, value, nil)
}

// campaign is Campaign, whose leadership calls onLost, when not nil, with
// the cause of its loss.
func (e *Election) campaign(ctx context.Context, value string, onLost func(cause error)) (*Leadership, error) {
	m := e.client.NewMutex(e.name, MutexOptions{TTL: e.options.TTL, MaxHold: e.options.MaxTerm,
		AutoExtend: true, Fencing: true, Metadata: value})
	if m.err != nil {
		return nil, fmt.Errorf("redlock: election %q: %w", e.name, m.err)
	}
	m.hold.mu.Lock()
	m.hold.onLost = onLost // set before the hold starts, so that no loss goes unseen
	m.hold.mu.Unlock()
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	h := &m.hold
	h.mu.Lock()
	l := &Leadership{election: e, mutex: m, generation: h.generation, value: value, term: h.fence}
	h.mu.Unlock()
	return l, nil
}

// Value returns the value the leader campaigned with.
func (l *Leadership) Value() string { return l.value }

// Term returns the leadership's term: the fence of its hold, larger than
// the term of every leader before it. Pass it with each write to a
// resource that refuses an older term (see docs/fencing.md).
func (l *Leadership) Term() int64 { return l.term }

// Until returns the end of the leadership's validity, a reading of the
// Client's monotonic clock, or the zero time once it has ended. Renewals
// move it later.
func (l *Leadership) Until() time.Time { return l.mutex.hold.untilOf(l.generation) }

// Done returns a channel that is closed when the leadership ends: at
// Resign, when it can no longer be renewed (two node timeouts before
// Until), at MaxTerm, and when the Client is closed. It is closed before
// another candidate can lead. A leader paused past that moment (a
// stopped process, a long garbage collection) finds it closed when it
// looks again, whether or not its timers have run yet.
func (l *Leadership) Done() <-chan struct{} { return l.mutex.doneByClock(l.generation) }

// Resign ends the leadership and releases its key on the nodes, so that
// another candidate may lead at once. It fails, matching ErrLockLost, when
// the leadership had already ended on the nodes, and with ErrNotHeld when
// it was resigned before.
func (l *Leadership) Resign(ctx context.Context) error {
	return l.mutex.release(ctx, l.generation)
}

// Run campaigns with value, calls lead while this candidate leads, and
// campaigns again when the leadership is lost, until ctx ends. lead's
// context is cancelled, with a cause matching ErrLockLost, when the
// leadership ends; lead should then return promptly. When lead returns
// while still leading, Run resigns and returns lead's error. Run returns
// the error of a Campaign that cannot succeed by waiting (ctx ended, the
// Client closed, options not valid); a quorum out of reach is waited out.
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
