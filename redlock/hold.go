package redlock

import (
	"context"
	"fmt"
	"time"
)

// Unlock releases the lock on every node. It returns nil only when a quorum
// of nodes confirmed that they released this hold while its validity had
// not ended; otherwise the error matches ErrLockLost: the hold may have
// been taken over by another client. Either way the Mutex is no longer held
// afterwards and may be locked again.
func (m *Mutex) Unlock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	m.mu.Lock()
	if !m.held {
		m.mu.Unlock()
		return ErrNotHeld
	}
	until := m.until
	m.mu.Unlock()
	defer m.giveTurn()
	defer m.endHold()

	c := m.client
	if err := c.misconfigured(); err != nil {
		return err
	}
	clock := c.options.Clock
	start := clock.Now()
	m.buildScript(&m.round.Calls[0], releaseLua, -1)
	m.round.SetAll()
	m.tally.reset(OperationUnlock, c.need)
	c.group.Send(m.round, m.roundDeadline(ctx))
	c.group.Wait(m.round, &m.tally)
	elapsed := clock.Now().Sub(start)
	m.reportNodeErrors()

	var err error
	switch {
	case !start.Before(until):
		err = fmt.Errorf("%w: the validity of %q ended %v before the unlock", ErrLockLost, m.key, start.Sub(until))
	case m.tally.got < c.need:
		err = m.tally.quorumError(m.key, c.addresses, elapsed)
	}
	c.stats.recordRelease(elapsed, err == nil)
	if observer := c.options.Observer; observer != nil {
		observer.OnRelease(ReleaseEvent{Key: m.key, Got: m.tally.got, Need: c.need, Elapsed: elapsed, Held: start.Sub(m.acquired), Err: err})
	}
	return err
}

// Extend renews the hold for another TTL from now, bounded by
// MutexOptions.MaxHold. It counts only if a quorum of nodes confirmed it
// before the current validity ended; the new validity is measured from the
// start of the extension. An extension that fails leaves the hold with its
// current validity, and its error matches ErrLockLost. An extension asked
// for after the validity ended fails at once.
func (m *Mutex) Extend(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	m.mu.Lock()
	if !m.held {
		m.mu.Unlock()
		return ErrNotHeld
	}
	until, acquired := m.until, m.acquired
	m.mu.Unlock()

	c := m.client
	if err := c.misconfigured(); err != nil {
		return err
	}
	clock := c.options.Clock
	start := clock.Now()
	if !start.Before(until) {
		return fmt.Errorf("%w: the validity of %q ended %v before the extension", ErrLockLost, m.key, start.Sub(until))
	}
	ttl := m.options.TTL
	if limit := acquired.Add(m.options.MaxHold).Sub(start); limit < ttl {
		ttl = limit.Truncate(time.Millisecond)
	}
	if validity(ttl, 0, c.options.DriftFactor) <= 0 {
		return errMaxHold
	}
	m.buildScript(&m.round.Calls[0], extendLua, ttl.Milliseconds())
	m.round.SetAll()
	m.tally.reset(OperationExtend, c.need)
	c.group.Send(m.round, m.roundDeadline(ctx))
	c.group.Wait(m.round, &m.tally)
	end := clock.Now()
	elapsed := end.Sub(start)
	m.reportNodeErrors()
	remaining := validity(ttl, elapsed, c.options.DriftFactor)

	var err error
	switch {
	case m.tally.got >= c.need && end.Before(until) && remaining > 0:
		m.mu.Lock()
		m.until = end.Add(remaining)
		if m.expiry != nil {
			m.expiry.Reset(m.until.Sub(clock.Now()))
		}
		m.mu.Unlock()
	case m.tally.got >= c.need:
		err = fmt.Errorf("%w: the extension of %q took %v and ended after the validity", ErrLockLost, m.key, elapsed)
	default:
		err = m.tally.quorumError(m.key, c.addresses, elapsed)
		if m.tally.refused > len(m.tally.nodes)-c.need {
			// A quorum of nodes said the hold is gone: it cannot come back.
			m.signalLost()
		}
	}
	c.stats.recordExtend(elapsed, err == nil)
	if observer := c.options.Observer; observer != nil {
		observer.OnExtend(ExtendEvent{Key: m.key, Got: m.tally.got, Need: c.need, Elapsed: elapsed, Validity: remaining, Err: err})
	}
	return err
}

// Until returns the end of the hold's validity, or the zero time when the
// Mutex is not held. Until then, and only then, the hold is exclusive
// under the algorithm's assumptions (see the package documentation).
func (m *Mutex) Until() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held {
		return time.Time{}
	}
	return m.until
}

// Token returns the hold's token, the value of the lock keys, or "" when
// the Mutex is not held. It can resume the hold in another process with
// MutexOptions.Token.
func (m *Mutex) Token() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held {
		return ""
	}
	return string(m.token)
}

// Fence returns the hold's fencing token, or 0 when the Mutex is not held
// or MutexOptions.Fencing is off.
func (m *Mutex) Fence() int64 {
	return 0
}

// Done returns a channel that is closed when the hold ends: at Unlock, when
// its validity passes without an extension, or when an extension finds
// that a quorum of nodes no longer holds it. For a Mutex that is not held
// it returns a closed channel.
func (m *Mutex) Done() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held || m.lost {
		return closedChannel
	}
	if m.done == nil {
		m.done = make(chan struct{})
		remaining := m.until.Sub(m.client.options.Clock.Now())
		if m.expiry == nil {
			m.expiry = time.AfterFunc(remaining, m.signalLost)
		} else {
			m.expiry.Reset(remaining)
		}
	}
	return m.done
}

// signalLost closes the Done channel of the current hold, if anybody asked
// for it; the Mutex stays held until Unlock.
func (m *Mutex) signalLost() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lost = m.held
	if m.done != nil {
		close(m.done)
		m.done = nil
	}
	if m.expiry != nil {
		m.expiry.Stop()
	}
}

// endHold forgets the hold and closes its Done channel.
func (m *Mutex) endHold() {
	m.signalLost()
	m.mu.Lock()
	m.held, m.lost, m.token, m.until, m.acquired = false, false, nil, time.Time{}, time.Time{}
	m.mu.Unlock()
}
