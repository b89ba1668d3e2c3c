package redlock

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/liveness"
	"github.com/lockmux/lockmux/redlock/internal/round"
)

// closedChannel is what Done returns when there is no hold.
var closedChannel = liveness.ClosedChannel()

// currentHold asks for the hold of whichever generation is current.
const currentHold = liveness.CurrentHold

// Until returns the end of the hold's validity, a reading of the Client's
// monotonic clock, or the zero time when the Mutex is not held.
// Until then, and only then, the hold is exclusive under the algorithm's
// assumptions (see the package documentation). An extension that a quorum
// confirms moves it; one that shortens the keys (see MutexOptions.Token
// and MaxHold) moves it earlier, confirmed or not. Done closes before it
// for a renewed hold, and when it passes otherwise.
func (m *Mutex) Until() time.Time {
	return m.hold.UntilOf(currentHold)
}

// Token returns the hold's token, the value of the lock keys (before the
// metadata, with MutexOptions.Metadata), or "" when the Mutex is not held.
// It can resume the hold in another process with MutexOptions.Token.
func (m *Mutex) Token() string {
	return m.tokenOf(currentHold)
}

// Metadata returns the hold's MutexOptions.Metadata, as the nodes keep it
// with the token, or "" when the Mutex is not held or has none.
func (m *Mutex) Metadata() string {
	h := &m.hold
	h.Mu.Lock()
	defer h.Mu.Unlock()
	if !h.HeldLocked(currentHold) {
		return ""
	}
	_, metadata := splitValue(h.Token)
	return string(metadata)
}

// tokenOf returns the token of the hold of the given generation, or ""
// when it is not held.
func (m *Mutex) tokenOf(generation uint64) string {
	h := &m.hold
	h.Mu.Lock()
	defer h.Mu.Unlock()
	if !h.HeldLocked(generation) {
		return ""
	}
	token, _ := splitValue(h.Token)
	return string(token)
}

// Fence returns the hold's fencing token, or 0 when the Mutex is not held
// or MutexOptions.Fencing is off. Fences of one resource strictly increase
// from hold to hold, across clients and processes, whatever set of keys
// locked it, as long as the nodes keep their data (see the package
// documentation, # Safety). Pass it to the resource with every write, and
// have the resource refuse a fence older than the newest it has seen
// (package fencedstore does that for a Redis key).
func (m *Mutex) Fence() int64 {
	return m.hold.FenceOf(currentHold)
}

// Done returns a channel that is closed when the hold ends, by a timer
// that does not wait for the renewal. With MutexOptions.AutoExtend, it
// closes two node timeouts before Until unless an extension moved Until in
// time; without, when Until passes. It closes earlier when an extension
// finds the hold gone, at Unlock, and when the Client is closed.
// docs/renewal.md lists every case. For a Mutex that is not held it
// returns a closed channel.
func (m *Mutex) Done() <-chan struct{} {
	return m.hold.DoneOf(currentHold)
}

// startHold records a new hold, sets the timer of its end and starts its
// renewal. It returns the hold's generation. The nodes that confirmed the
// round counted by tally, its acquisition or its resumption, are the
// nodes the hold had; the rounds lent for it are given back.
func (m *Mutex) startHold(start, until time.Time, fence int64, tally *round.Tally) uint64 {
	c := m.client
	h := &m.hold
	h.Mu.Lock()
	for i, node := range tally.Nodes {
		h.Had[i] = node.Outcome == round.OutcomeConfirmed
	}
	watched := m.watched()
	var unsure []bool
	if watched {
		m.watchNodesLocked(tally)
		unsure = unsureNodes(tally, nil)
	}
	// The held Mutex keeps no round: its release borrows one once it
	// ended the hold, under h.Mu. The tally is not read after this:
	// another Mutex may borrow its round at once.
	m.giveBackRounds()
	generation := h.StartLocked(m.acquisition.token(), start, until, fence, m.ttl)
	if watched {
		h.WatchTag = c.watcher.NewWriteTag()
	}
	tag := h.WatchTag
	listed := c.holds.AddLocked((*livenessLock)(m))
	c.ends.SetLocked((*livenessLock)(m))
	h.Mu.Unlock()
	if !listed {
		// The Client closed during the acquisition: nothing would end
		// the hold at Close any more.
		m.signalLost(generation, errClientClosed)
		return generation
	}
	if m.autoExtend {
		m.scheduleRenewal(liveness.Renewal[*livenessLock]{Lock: (*livenessLock)(m), Generation: generation,
			Due: m.nextRenewal(c.options.clock.Now(), until, m.ttl), Early: liveness.RenewalEarly(m.ttl)})
	}
	if watched {
		c.watcher.watch(m)
		m.startArming(generation, tag, allNodes, unsure)
	}
	return generation
}

// endHold ends the hold of the given generation, or the current one with
// currentHold, if it is still held (liveness.Hold.EndLocked). It waits
// for the commands being sent for the hold, so that what follows is
// queued behind them on every node. It returns the hold as it was, and
// whether it ended it.
func (m *Mutex) endHold(generation uint64) (ended endedHold, ok bool) {
	h := &m.hold
	m.sending.Lock()
	h.Mu.Lock()
	if h.HeldLocked(generation) {
		ended = endedHold{until: h.Until, acquired: h.Acquired, lost: h.Lost}
		h.EndLocked()
		m.client.ends.RemoveLocked((*livenessLock)(m))
		m.client.holds.RemoveLocked((*livenessLock)(m))
		ok = true
	}
	h.Mu.Unlock()
	m.sending.Unlock()
	if ok && m.watched() {
		m.client.watcher.forget(m)
	}
	return ended, ok
}

// endedHold is what endHold tells of the hold it ended.
type endedHold struct {
	until, acquired time.Time
	lost            bool
}

// signalLost ends a hold that can no longer be proven, once: it closes
// Done and cancels the context of Client.Do with err as the cause, made to
// match ErrLockLost if it does not (a renewal that found the Client
// closed). The Mutex stays held until Unlock.
func (m *Mutex) signalLost(generation uint64, err error) {
	if !errors.Is(err, ErrLockLost) {
		err = fmt.Errorf("%w: %w", ErrLockLost, err)
	}
	onLost, acquired, ok := m.hold.MarkLost(generation)
	if !ok {
		return
	}
	held := time.Duration(0)
	if !acquired.IsZero() {
		held = m.client.options.clock.Now().Sub(acquired)
	}
	m.client.stats.recordLost()
	if onLost != nil {
		onLost(err)
	}
	if observer := m.client.options.Observer; observer != nil {
		observer.OnLost(LostEvent{Key: m.key, Held: held, Err: err})
	}
}

// moveUntilLocked sets the validity of the hold to until, after an
// extension. A later validity leaves the end's timer as it is: it finds
// the new end when it fires. An earlier one (an extension that shortened
// the keys) sets it again at once. The caller holds m.hold.Mu.
func (m *Mutex) moveUntilLocked(until time.Time) {
	h := &m.hold
	earlier := until.Before(h.Until)
	h.Until = until
	if earlier && !h.Lost {
		m.client.ends.SetLocked((*livenessLock)(m))
	}
}

// endByClose ends the hold of m, if it has one, when its Client closes:
// nothing renews it any more. Its end is no longer watched.
func (m *Mutex) endByClose() {
	h := &m.hold
	h.Mu.Lock()
	held, generation := h.Held, h.Generation
	m.client.ends.RemoveLocked((*livenessLock)(m))
	h.Mu.Unlock()
	if held {
		m.signalLost(generation, errClientClosed)
	}
}

// validAtReturn is the last step of a successful Lock or TryLock, right
// before the return that hands the hold over: it reports whether the hold
// of the given generation is still valid by the Client's clock. A hold
// that another goroutine unlocked meanwhile counts as returned: that
// Unlock passed the turn on.
func (m *Mutex) validAtReturn(generation uint64) bool {
	h := &m.hold
	h.Mu.Lock()
	valid := !h.CurrentLocked(generation) || m.client.options.clock.Now().Before(h.Until)
	h.Mu.Unlock()
	return valid
}

// doneByClock returns the Done channel of the hold of the given
// generation, after ending the hold if its end has come by the Client's
// clock though its timer has not fired yet: a holder whose process was
// paused past the end finds Done closed when it looks.
func (m *Mutex) doneByClock(generation uint64) <-chan struct{} {
	h := &m.hold
	h.Mu.Lock()
	due := h.CurrentLocked(generation) && !h.Lost && !m.client.options.clock.Now().Before(liveness.EndLocked((*livenessLock)(m)))
	h.Mu.Unlock()
	if due {
		m.signalLost(generation, fmt.Errorf("%w: the end of the validity of %q passed before its timer ran", ErrLockLost, m.key))
	}
	return h.DoneOf(generation)
}
