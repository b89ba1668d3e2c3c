package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockmux/lockmux/mux"
)

// ErrNotHeld is returned by Unlock and Extend on a Mutex that is not held.
var ErrNotHeld = errors.New("redlock: mutex not held")

// errHeldLocally is returned by TryLock while another goroutine of this
// process holds the Mutex or is acquiring it.
var errHeldLocally = fmt.Errorf("%w: held by another goroutine of this process", ErrNotAcquired)

// errMaxHold is returned by Extend when the hold has lasted
// MutexOptions.MaxHold.
var errMaxHold = fmt.Errorf("%w: the hold reached MutexOptions.MaxHold", ErrLockLost)

// closedChannel is what Done returns when there is no hold.
var closedChannel = func() chan struct{} {
	channel := make(chan struct{})
	close(channel)
	return channel
}()

// Mutex is a lock on one resource (or several, with MutexOptions.Keys)
// across the Client's nodes. It is reusable: lock, unlock, lock again,
// without allocating.
//
// A Mutex is safe for concurrent use. Within one process it behaves like a
// sync.Mutex: a goroutine that calls Lock while another goroutine holds the
// Mutex waits locally, without network traffic, and gets its chance when
// the Mutex is unlocked. Unlock may be called by another goroutine than
// the one that locked.
type Mutex struct {
	client  *Client
	key     string
	keys    []string // key, then MutexOptions.Keys
	options MutexOptions
	err     error // why the options are not valid, or nil
	ttl     int64 // milliseconds

	// turn holds one token while a goroutine of this process holds the
	// Mutex or is acquiring it.
	turn chan struct{}

	// The fields below belong to the goroutine that has the turn.
	round         *mux.Round
	tally         tally
	commitTally   tally    // the commit round of a fenced acquisition
	fenceKeys     []string // the keys of the keys' fencing counters
	wait          waitState
	remainingTTLs []int64 // scratch of resume
	tokenBytes    [MaxTokenLength]byte
	tokenSize     int

	// renewal belongs to the Client's renewer goroutine.
	renewal extensionState

	// extending is the state of Extend; extendMu serializes its callers.
	extendMu  sync.Mutex
	extending extensionState

	// sending is held for reading while an extension or a repair of the
	// hold is being queued on the nodes, and for writing by Unlock while
	// it ends the hold: the release, and the next hold's acquisition, are
	// queued behind every command sent for a hold, on every node.
	sending sync.RWMutex

	// mu guards the state of the hold, which any goroutine may read.
	mu         sync.Mutex
	held       bool
	lost       bool      // the hold can no longer be proven; Done is closed
	generation uint64    // counts the starts and ends of holds
	token      []byte    // tokenBytes[:tokenSize] while held
	acquired   time.Time // the start of the acquisition round of the hold
	until      time.Time // the end of the hold's validity
	fence      int64     // the hold's fence, 0 without fencing
	had        []bool    // per node: it confirmed the hold's acquisition, resumption or a successful extension
	done       chan struct{}
	onLost     func(cause error) // set by Client.Do: cancels its context
	endTimer   *time.Timer       // fires at the hold's end (see expiry.go)

	// heldIndex is the Mutex's place in its Client's holdRegistry, guarded
	// by the registry's mutex.
	heldIndex int
}

func newMutex(c *Client, key string, options MutexOptions) *Mutex {
	m := &Mutex{client: c, key: key, turn: make(chan struct{}, 1)}
	m.wait.notify = make(chan struct{}, 1)
	m.options, m.err = options.withDefaults(c.options)
	if m.err == nil {
		m.err = checkKeys(key, m.options.Keys)
	}
	if m.err != nil {
		return m
	}
	m.keys = append([]string{key}, m.options.Keys...)
	m.ttl = m.options.TTL.Milliseconds()
	m.round = c.group.NewRound()
	// Every node sees this client's acquisitions and releases in one order:
	// a release and an attempt, or two attempts, racing on one key cannot
	// split the nodes between them.
	m.round.Ordered = true
	m.tally.nodes = make([]nodeOutcome, c.group.Len())
	m.tally.keys = len(m.keys)
	m.had = make([]bool, c.group.Len())
	if m.options.Fencing {
		m.fenceKeys = fenceKeys(m.keys)
		m.commitTally.nodes = make([]nodeOutcome, c.group.Len())
		m.commitTally.keys = len(m.keys)
	}
	return m
}

// Key returns the Mutex's key.
func (m *Mutex) Key() string { return m.key }

// Lock acquires the lock, trying again, as Options.RetryDelayMin says,
// until it succeeds, MutexOptions.MaxTries attempts have failed, or ctx is
// done. It fails at once with an error matching ErrQuorumUnreachable when
// so many nodes are down or misconfigured that no attempt can succeed.
//
// Lock returns a hold only while it is valid: its validity is checked by
// the Client's clock as the last step before Lock returns, after the
// observers have run. An attempt whose hold ended before then counts as
// failed; its keys are released and the observer is told of the loss.
//
// A failure matches ErrNotAcquired, the context's error when ctx ended, or
// ErrClosed when the Client was closed (Close ends the wait at once);
// errors.As with a *QuorumError gives each node's outcome in the last
// attempt.
func (m *Mutex) Lock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	if err := m.takeTurn(ctx); err != nil {
		return err
	}
	attempts := 0
	for {
		generation, err := m.acquireWithRetries(ctx, &attempts)
		if err == nil {
			if m.validAtReturn(generation) {
				return nil // nothing runs between the check and the return
			}
			// The attempt failed after all: the hold it won ended while
			// the observers ran. Try again at the retry delay.
			if err = m.dropEndedHold(generation); err == nil {
				return nil // unlocked by another goroutine, which passed the turn on
			}
			switch {
			case ctx.Err() != nil:
				err = fmt.Errorf("redlock: lock %q: %w: %w", m.key, context.Cause(ctx), err)
			case m.options.MaxTries > 0 && attempts >= m.options.MaxTries:
			default:
				sleepErr := m.sleep(ctx, m.retryDelay(), false)
				if sleepErr == nil {
					continue
				}
				err = fmt.Errorf("redlock: lock %q: %w: %w", m.key, sleepErr, err)
			}
		}
		m.giveTurn()
		return err
	}
}

// TryLock makes one attempt to acquire the lock. It fails with an error
// matching ErrNotAcquired when the lock is held by another client, by
// another goroutine of this process, when no quorum of nodes agreed, or
// when the hold's validity ended before TryLock could return it.
func (m *Mutex) TryLock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	select {
	case m.turn <- struct{}{}:
	default:
		return errHeldLocally
	}
	elapsed, generation, err := m.attempt(ctx)
	if err == nil {
		if m.validAtReturn(generation) {
			return nil // nothing runs between the check and the return
		}
		if err = m.dropEndedHold(generation); err == nil {
			return nil // unlocked by another goroutine, which passed the turn on
		}
	}
	if err == errAttemptFailed {
		// The tally belongs to the goroutine that has the turn: read it
		// before the turn passes to another goroutine's attempt.
		err = m.tally.quorumError(m.key, m.client.addresses, elapsed)
	}
	m.giveTurn()
	return err
}

// takeTurn waits until no other goroutine of this process holds the Mutex,
// ctx is done, or the Client is closed.
func (m *Mutex) takeTurn(ctx context.Context) error {
	select {
	case m.turn <- struct{}{}:
		return nil
	default:
	}
	select {
	case m.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("redlock: lock %q: waiting for another goroutine of this process: %w", m.key, context.Cause(ctx))
	case <-m.client.closing:
		return fmt.Errorf("redlock: lock %q: waiting for another goroutine of this process: %w", m.key, ErrClosed)
	}
}

func (m *Mutex) giveTurn() { <-m.turn }

// errAttemptFailed reports that an attempt ran and did not win a quorum;
// the details are in the Mutex's tally.
var errAttemptFailed = errors.New("redlock: attempt failed")

// acquireWithRetries runs attempts until one wins a hold, an attempt
// fails for good, MaxTries attempts in all (counted in *attempts) failed,
// or ctx ends. It returns the generation of the hold won; the caller
// checks its validity.
func (m *Mutex) acquireWithRetries(ctx context.Context, attempts *int) (uint64, error) {
	reconnected, subscribed := false, false
	defer func() {
		if subscribed {
			m.client.notifier.unregister(m, false)
		}
	}()
	for {
		*attempts++
		attempt := *attempts
		var answered int32
		if subscribed {
			answered = m.startAttempt()
		}
		elapsed, generation, err := m.attempt(ctx)
		if subscribed && err == nil {
			m.client.notifier.unregister(m, true)
			subscribed = false
		}
		switch {
		case err == nil:
			return generation, nil
		case err != errAttemptFailed:
			return 0, err
		}
		if subscribed {
			m.wait.releaseWakes.Add(-answered)
		}
		failure := func() error { return m.tally.quorumError(m.key, m.client.addresses, elapsed) }
		if m.tally.unreachable() {
			// Nodes that are down were being dialled again: give them one
			// chance to come back before saying the quorum is out of reach.
			if reconnected {
				return 0, failure()
			}
			reconnected = true
			m.client.group.Connect(ctx)
			continue
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("redlock: lock %q: %w: %w", m.key, context.Cause(ctx), failure())
		}
		if m.options.MaxTries > 0 && attempt >= m.options.MaxTries {
			return 0, failure()
		}
		listen := false
		switch {
		case m.tally.got > 0:
			// A split vote: competing clients each won some nodes. Back off
			// at random, deaf to notifications, so that they fall out of
			// step.
		case m.tally.refused > 0:
			// Somebody holds the lock: wait for its release notification.
			// A new subscription wakes the waiter once a quorum of nodes
			// confirmed it, so that a release between the failed attempt
			// and the subscription is not missed.
			if !subscribed {
				m.startAttempt() // forget the wake-ups that came after an earlier Lock's last attempt
				subscribed = m.client.notifier.register(m)
			}
			listen = subscribed
		}
		if err := m.sleep(ctx, m.retryDelay(), listen); err != nil {
			return 0, fmt.Errorf("redlock: lock %q: %w: %w", m.key, err, failure())
		}
	}
}

// roundDeadline is when the nodes' replies are due: one node timeout from
// now. It is the nodes' deadline, never the caller's: a caller whose
// context ends sooner stops waiting (mux.Group.Wait), and the connections
// it shares with others go on.
func (m *Mutex) roundDeadline() time.Time {
	return time.Now().Add(m.client.options.NodeTimeout)
}

// releaseCarriedUntil is when a release sent now stops mattering on a node
// that has not answered it: every command that could have set or extended
// the keys before it was sent has run, or never will, by one node timeout
// after it (the connection fails then, see mux.Round.Carry), and their TTL
// has passed a TTL and the drift allowance later.
func (m *Mutex) releaseCarriedUntil() time.Time {
	c := m.client
	return time.Now().Add(m.options.TTL + drift(m.options.TTL, c.options.DriftFactor) + c.options.NodeTimeout)
}

// buildRelease writes the release of the hold's keys, with its token, into
// m.round: an EVAL, not an EVALSHA, since the release is carried
// (mux.Round.Carry), finished by the transport whoever waits for it and
// sent again after a reconnection, and nobody would be there to answer
// NOSCRIPT. With an identity the nodes announce the release under it;
// without one (the clean-up after a failed attempt) they announce nothing.
func (m *Mutex) buildRelease(identity []byte) {
	arguments := 1
	if identity != nil {
		arguments = 2
	}
	m.round.SetEval(releaseLua, len(m.keys), arguments)
	m.appendKeys(m.round)
	m.round.AppendBulk(m.tokenBytes[:m.tokenSize])
	if identity != nil {
		m.round.AppendBulk(identity)
	}
	m.round.Carry(m.releaseCarriedUntil(), m.key)
}

// attempt runs one acquisition: one round, two with fencing, and a
// resumption check first when MutexOptions.Token is set. On success the
// Mutex is held and attempt returns the hold's generation; the caller
// checks the hold's validity once more before it returns it (see
// validAtReturn). On failure it sends the release to every node that may
// have set the key and returns errAttemptFailed, with the details in
// m.tally.
func (m *Mutex) attempt(ctx context.Context) (time.Duration, uint64, error) {
	c := m.client
	if err := c.misconfigured(); err != nil {
		return 0, 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("redlock: lock %q: %w", m.key, context.Cause(ctx))
	}
	if err := m.newToken(); err != nil {
		return 0, 0, err
	}
	clock := c.options.Clock
	if m.options.Token != "" {
		if elapsed, generation := m.resume(ctx); generation != 0 {
			return elapsed, generation, nil
		}
	}
	start := clock.Now()
	if m.options.Fencing {
		m.buildFencedAcquire()
	} else {
		m.buildAcquire()
	}
	m.tally.reset(OperationLock, c.need)
	m.tally.fenced = m.options.Fencing
	c.group.Send(m.round, m.roundDeadline())
	waitErr := c.group.Wait(ctx, m.round, &m.tally)
	var fence int64
	committed := true
	if m.options.Fencing && m.tally.got >= c.need && waitErr == nil {
		fence, committed = m.commitFence(ctx)
	}
	end := clock.Now()
	elapsed := end.Sub(start)
	remaining := validity(m.options.TTL, elapsed, c.options.DriftFactor)
	// A node that connected during the round may have shown that two
	// addresses reach one server (its OnConnect ran before it carried the
	// round's command): then the count cannot be trusted.
	misconfigured := c.misconfigured()
	acquired := m.tally.got >= c.need && committed && remaining > 0 && waitErr == nil && misconfigured == nil
	c.stats.recordAcquire(elapsed, acquired)
	m.reportNodeErrors()
	if acquired {
		// Once the hold starts, another goroutine may Unlock it and use the
		// round and the tally: nothing of them is read after this point.
		got := m.tally.got
		generation := m.startHold(start, end.Add(remaining), fence)
		if observer := c.options.Observer; observer != nil {
			observer.OnAcquire(AcquireEvent{Key: m.key, Got: got, Need: c.need, Elapsed: elapsed, Validity: remaining})
		}
		return elapsed, generation, nil
	}
	m.releaseAfterFailure()
	if misconfigured != nil {
		return elapsed, 0, misconfigured
	}
	if observer := c.options.Observer; observer != nil {
		observer.OnAcquire(AcquireEvent{Key: m.key, Got: m.tally.got, Need: c.need, Elapsed: elapsed,
			Err: m.tally.quorumError(m.key, c.addresses, elapsed)})
	}
	if ctx.Err() != nil {
		// The caller stopped waiting: its error says so first.
		return elapsed, 0, fmt.Errorf("redlock: lock %q: %w: %w", m.key, context.Cause(ctx), m.tally.quorumError(m.key, c.addresses, elapsed))
	}
	return elapsed, 0, errAttemptFailed
}

// newToken picks the token of the next hold: MutexOptions.Token when set,
// otherwise a new random one.
func (m *Mutex) newToken() error {
	if m.options.Token != "" {
		m.tokenSize = copy(m.tokenBytes[:], m.options.Token)
		return nil
	}
	var random [tokenLength]byte
	if err := newToken(&random); err != nil {
		return err
	}
	m.tokenSize = copy(m.tokenBytes[:], random[:])
	return nil
}

// buildAcquire writes the acquisition command into the round: SET key token
// NX PX ttl for one key, the all-or-nothing script for several.
func (m *Mutex) buildAcquire() {
	if len(m.keys) > 1 {
		m.buildScript(m.round, acquireMultiLua, m.ttl)
		return
	}
	m.round.StartCommand(6, "SET")
	m.round.AppendString(m.key)
	m.round.AppendBulk(m.tokenBytes[:m.tokenSize])
	m.round.AppendString("NX")
	m.round.AppendString("PX")
	m.round.AppendInt(m.ttl)
}

// releaseAfterFailure sends the release to every node that may hold the key
// after a failed attempt, without waiting for the replies: a node whose
// SET timed out may still apply it, and the release, queued behind it on
// the same connection, removes it. The release is carried: the transport
// finishes it (see mux.Round.Carry).
func (m *Mutex) releaseAfterFailure() {
	needed := false
	for i := range m.tally.nodes {
		if m.tally.mayHoldKey(i) {
			needed = true
		}
	}
	if !needed {
		return
	}
	// EVAL rather than EVALSHA: nobody awaits these replies, so a NOSCRIPT
	// could not be answered with the fallback. Without a release identity,
	// it announces nothing: waking the waiters for a lock nobody held would
	// only make them collide again.
	m.buildRelease(nil)
	for i := range m.tally.nodes {
		if !m.tally.mayHoldKey(i) {
			m.round.Skip(i)
		}
	}
	m.client.group.Send(m.round, m.roundDeadline())
	m.client.group.Discard(m.round)
}

// buildScript writes "EVALSHA script keys… token [ttl]" into round; a
// negative ttl leaves the TTL argument out.
func (m *Mutex) buildScript(round *mux.Round, script *mux.Script, ttl int64) {
	m.buildScriptWithToken(round, script, m.tokenBytes[:m.tokenSize], ttl)
}

// buildScriptWithToken is buildScript with the token given.
func (m *Mutex) buildScriptWithToken(round *mux.Round, script *mux.Script, token []byte, ttl int64) {
	arguments := 1
	if ttl >= 0 {
		arguments = 2
	}
	round.SetScript(script, len(m.keys), arguments)
	m.appendKeys(round)
	round.AppendBulk(token)
	if ttl >= 0 {
		round.AppendInt(ttl)
	}
}

// appendKeys appends the Mutex's keys to round's command.
func (m *Mutex) appendKeys(round *mux.Round) {
	for _, key := range m.keys {
		round.AppendString(key)
	}
}

// reportNodeErrors counts the failed nodes of the last round and tells the
// observer about them.
func (m *Mutex) reportNodeErrors() { m.reportNodeErrorsOf(&m.tally) }

func (m *Mutex) reportNodeErrorsOf(tally *tally) {
	if tally.failed == 0 {
		return
	}
	observer := m.client.options.Observer
	for i, node := range tally.nodes {
		switch node.outcome {
		case OutcomeError, OutcomeTimeout, OutcomeNotSent:
			if node.err == errNotAwaited {
				continue
			}
			m.client.stats.recordNodeError(node.outcome)
			if observer != nil {
				observer.OnNodeError(NodeErrorEvent{Key: m.key, Operation: tally.operation, Address: m.client.addresses[i],
					Outcome: node.outcome, Latency: node.latency, Err: node.err})
			}
		}
	}
}
