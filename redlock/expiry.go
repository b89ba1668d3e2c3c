package redlock

import (
	"fmt"
	"time"
)

// The end of a hold is watched apart from its renewal (see holdEnds),
// whatever the renewal is doing: the renewer's goroutine may be waiting
// for a round or for an observer, and the end must not wait for it. The
// end is watched, from the hold's start, for its validity less the loss
// margin. When that moment comes, the hold is looked at again by the
// Client's clock, and a hold whose validity an extension moved later is
// watched again, for its new end: an extension moves the end later only
// once a quorum confirmed it. An extension that shortens the keys (see applyExtension)
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
// current hold is signalled. The caller holds m.hold.mu.
func (m *Mutex) endLocked() time.Time {
	return m.hold.until.Add(-m.lossMargin())
}

// setEndTimerLocked watches the hold's end (see holdEnds). The caller
// holds m.hold.mu.
func (m *Mutex) setEndTimerLocked() {
	m.client.ends.set(m, m.endLocked())
}

// moveUntilLocked sets the validity of the hold to until, after an
// extension. A later validity leaves the timer of the hold's end as it is:
// it finds the new end when it fires. An earlier one (an extension that
// shortened the keys) sets the timer again at once. The caller holds m.hold.mu.
func (m *Mutex) moveUntilLocked(until time.Time) {
	h := &m.hold
	earlier := until.Before(h.until)
	h.until = until
	if earlier && !h.lost {
		m.setEndTimerLocked()
	}
}

// endHasCome runs when the end of the hold watched has come by the
// Client's clock. It reports, with the hold's generation, whether the
// hold ends now; otherwise an extension moved its end, or the clock is
// slower than the timer, and the end is watched again.
func (m *Mutex) endHasCome() (generation uint64, ended bool) {
	h := &m.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held || h.lost {
		return 0, false
	}
	if delay := m.client.timerDelay(m.endLocked()); delay > 0 {
		m.setEndTimerLocked()
		return 0, false
	}
	return h.generation, true
}

// signalEnd signals the end of the hold of the given generation, which
// endHasCome found.
func (m *Mutex) signalEnd(generation uint64) {
	if m.options.AutoExtend {
		m.signalLost(generation, fmt.Errorf("%w: %q was not renewed %v before its validity ends", ErrLockLost, m.key, m.lossMargin()))
		return
	}
	m.signalLost(generation, fmt.Errorf("%w: the validity of %q passed", ErrLockLost, m.key))
}

// endByClose ends the hold of m, if it has one, when its Client closes:
// nothing renews it any more. Its end is no longer watched.
func (m *Mutex) endByClose() {
	h := &m.hold
	h.mu.Lock()
	held, generation := h.held, h.generation
	m.client.ends.remove(m)
	h.mu.Unlock()
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
	h := &m.hold
	h.mu.Lock()
	valid := !h.currentLocked(generation) || m.client.options.clock.Now().Before(h.until)
	h.mu.Unlock()
	return valid
}

// doneByClock returns the Done channel of the hold of the given
// generation, after ending the hold if its end has come by the Client's
// clock though its timer has not fired yet: a holder whose process was
// paused past the end finds Done closed when it looks, before the
// timers that were due during the pause have run.
func (m *Mutex) doneByClock(generation uint64) <-chan struct{} {
	h := &m.hold
	h.mu.Lock()
	due := h.currentLocked(generation) && !h.lost && !m.client.options.clock.Now().Before(m.endLocked())
	h.mu.Unlock()
	if due {
		m.signalLost(generation, fmt.Errorf("%w: the end of the validity of %q passed before its timer ran", ErrLockLost, m.key))
	}
	return h.doneOf(generation)
}
