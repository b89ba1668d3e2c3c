package redlock

import (
	"fmt"
	"sync"
	"time"
)

// The end of a hold is watched by a timer of its own, whatever the renewal
// is doing: the renewer's goroutine may be waiting for a round or for an
// observer, and the end must not wait for it. The timer is set, when the
// hold starts, for the hold's end: its validity less the loss margin.
// When it fires, it looks at the hold again by the Client's clock, and a
// hold whose validity an extension moved later gets the timer again, for
// its new end: an extension moves the end later only once a quorum
// confirmed it. An extension that shortens the keys (see applyExtension)
// moves it earlier at once, confirmed or not. Nothing else moves it.

// lossMargin is how long before the end of its validity the end of a hold
// is signalled. A renewed hold gets two node timeouts: its holder, told
// that the hold is lost, gets a node timeout to stop while the hold is
// still exclusive, and the renewal plans its attempts to finish one node
// timeout before that. A hold that nobody renews ends with its validity.
func (m *Mutex) lossMargin() time.Duration {
	if !m.options.AutoExtend {
		return 0
	}
	return 2 * m.client.options.NodeTimeout
}

// endLocked returns the moment, by the Client's clock, when the end of the
// current hold is signalled. The caller holds m.mu.
func (m *Mutex) endLocked() time.Time {
	return m.until.Add(-m.lossMargin())
}

// setEndTimerLocked sets the timer of the hold's end, made on the first
// hold of the Mutex and reused by the next ones. The caller holds m.mu.
func (m *Mutex) setEndTimerLocked() {
	delay := m.client.timerDelay(m.endLocked())
	if m.endTimer == nil {
		m.endTimer = time.AfterFunc(delay, m.watchEnd)
		return
	}
	m.endTimer.Reset(delay)
}

// moveUntilLocked sets the validity of the hold to until, after an
// extension. A later validity leaves the timer of the hold's end as it is:
// it finds the new end when it fires. An earlier one (an extension that
// shortened the keys) sets the timer again at once. The caller holds m.mu.
func (m *Mutex) moveUntilLocked(until time.Time) {
	earlier := until.Before(m.until)
	m.until = until
	if earlier && !m.lost {
		m.setEndTimerLocked()
	}
}

// watchEnd runs when the timer of the hold's end fires. It ends the hold
// if its end has come by the Client's clock; otherwise an extension moved
// it, or the clock is slower than the timer, and the timer is set again.
func (m *Mutex) watchEnd() {
	m.mu.Lock()
	if !m.held || m.lost {
		m.mu.Unlock()
		return
	}
	if delay := m.client.timerDelay(m.endLocked()); delay > 0 {
		m.endTimer.Reset(delay)
		m.mu.Unlock()
		return
	}
	generation := m.generation
	m.mu.Unlock()
	if m.options.AutoExtend {
		m.signalLost(generation, fmt.Errorf("%w: %q was not renewed %v before its validity ends", ErrLockLost, m.key, m.lossMargin()))
		return
	}
	m.signalLost(generation, fmt.Errorf("%w: the validity of %q passed", ErrLockLost, m.key))
}

// endByClose ends the hold of m, if it has one, when its Client closes:
// nothing renews it any more. Its timer stops.
func (m *Mutex) endByClose() {
	m.mu.Lock()
	held, generation := m.held, m.generation
	if m.endTimer != nil {
		m.endTimer.Stop()
	}
	m.mu.Unlock()
	if held {
		m.signalLost(generation, errClientClosed)
	}
}

// validAtReturn is the last step of a successful Lock or TryLock, right
// before the return that hands the hold over: it reports whether the hold
// of the given generation is still valid by the Client's clock. Whatever
// an attempt does after its round (the observers, the stats, the hold's
// timer and renewal, the end of a wait) runs before it. A hold that
// another goroutine unlocked meanwhile counts as returned: that Unlock
// passed the turn on.
func (m *Mutex) validAtReturn(generation uint64) bool {
	m.mu.Lock()
	valid := !m.held || m.generation != generation || m.client.options.Clock.Now().Before(m.until)
	m.mu.Unlock()
	return valid
}

// dropEndedHold ends a hold that an attempt won but whose validity ended
// before Lock or TryLock could return it: the attempt failed after all.
// The keys are released on every node, without waiting (the release is
// carried, see buildRelease), and the observer is told the hold was lost
// unless it was already. It returns the attempt's error, which matches
// ErrNotAcquired, or nil when another goroutine unlocked the hold first
// (see validAtReturn).
func (m *Mutex) dropEndedHold(generation uint64) error {
	c := m.client
	m.sending.Lock()
	m.mu.Lock()
	current, lost, acquired, until := m.held && m.generation == generation, m.lost, m.acquired, m.until
	if current {
		m.endHoldLocked()
	}
	m.mu.Unlock()
	m.sending.Unlock()
	if !current {
		return nil
	}
	m.buildRelease(nil)
	c.group.Send(m.round, m.roundDeadline())
	c.group.Discard(m.round)
	now := c.options.Clock.Now()
	err := fmt.Errorf("%w: the validity of %q ended %v before the hold could be returned", ErrNotAcquired, m.key, now.Sub(until))
	if !lost {
		c.stats.recordLost()
		if observer := c.options.Observer; observer != nil {
			observer.OnLost(LostEvent{Key: m.key, Held: now.Sub(acquired), Err: fmt.Errorf("%w: %w", ErrLockLost, err)})
		}
	}
	return err
}

// holdRegistry lists the Mutexes of a Client that hold a lock, so that
// Client.Close can end their holds. Adding and removing a Mutex costs no
// allocation once the list has grown to the number of holds at once.
type holdRegistry struct {
	mu      sync.Mutex
	closed  bool     // guarded by mu
	mutexes []*Mutex // guarded by mu; each Mutex's heldIndex is its place
}

// add lists m, whose hold starts. It reports false after close: the hold
// must then be ended at once. The caller holds m.mu.
func (r *holdRegistry) add(m *Mutex) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	m.heldIndex = len(r.mutexes)
	r.mutexes = append(r.mutexes, m)
	return true
}

// remove forgets m, whose hold ended. The caller holds m.mu.
func (r *holdRegistry) remove(m *Mutex) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := m.heldIndex
	if i < 0 || i >= len(r.mutexes) || r.mutexes[i] != m {
		return // not listed: the hold started after close, or close took it
	}
	last := len(r.mutexes) - 1
	r.mutexes[i] = r.mutexes[last]
	r.mutexes[i].heldIndex = i
	r.mutexes[last] = nil
	r.mutexes = r.mutexes[:last]
	m.heldIndex = -1
}

// close stops the listing and ends the hold of every Mutex listed.
func (r *holdRegistry) close() {
	r.mu.Lock()
	r.closed = true
	mutexes := r.mutexes
	r.mutexes = nil
	for _, m := range mutexes {
		m.heldIndex = -1
	}
	r.mu.Unlock()
	// Outside r.mu: the loss reaches the observer, who may unlock.
	for _, m := range mutexes {
		m.endByClose()
	}
}
