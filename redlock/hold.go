package redlock

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// closedChannel is what Done returns when there is no hold.
var closedChannel = func() chan struct{} {
	channel := make(chan struct{})
	close(channel)
	return channel
}()

// hold is the state of a Mutex's hold, which any goroutine may read: its
// token, validity, fence, generation and Done channel. mu guards every
// field; the registry's index alone is guarded by the registry's mutex.
//
// A hold starts (startHold) when an acquisition or a resumption wins, and
// ends (endLocked) at Unlock or when an attempt drops a hold that ended
// before it could be returned. In between it may be lost (signalLost):
// Done closes and Client.Do's context is cancelled, but it stays held,
// for Unlock to release. Each start and each end counts a generation, so
// that a renewal, an extension or a timer of a hold that ended finds it
// gone whatever holds the Mutex now.
type hold struct {
	mu         sync.Mutex
	held       bool
	lost       bool   // the hold can no longer be proven; Done is closed
	generation uint64 // counts the starts and ends of holds
	token      []byte // the acquisition's token while held
	acquired   time.Time
	until      time.Time // the end of the validity, by the Client's clock
	fence      int64     // 0 without fencing
	// ttl is the TTL of the hold's extensions: MutexOptions.TTL, or what
	// ExtendFor last set. longestTTL is the longest any hold of the Mutex
	// had, read without the lock: a carried release lasts that long.
	ttl        time.Duration
	longestTTL atomic.Int64
	// had is, per node, whether it confirmed the hold's acquisition, its
	// resumption or a successful extension: the nodes a repair may set
	// the keys on again.
	had []bool
	// watching is, per node, whether it confirmed the hold's last own
	// write, for a watched hold: the nodes where its keys are armed (see
	// watcher). watchTag is the tag of that write, and writing is set
	// while it is under way: nothing is armed then.
	watching []bool
	watchTag uint64
	writing  bool
	done     chan struct{}
	onLost   func(cause error) // set by Client.Do: cancels its context
	// endAt is the moment the hold's end is watched for, by the Client's
	// clock, and endPlace one more than its index in the Client's
	// holdEnds, 0 when not listed: both guarded by the holdEnds' mutex.
	endAt    time.Time
	endPlace int

	// registryIndex is the Mutex's place in its Client's holdRegistry.
	registryIndex int
}

// currentLocked reports whether the hold of the given generation is the
// current one and held. The caller holds h.mu.
func (h *hold) currentLocked(generation uint64) bool {
	return h.held && h.generation == generation
}

// heldLocked reports whether the hold of the given generation, or any
// hold for currentHold, is held. The caller holds h.mu.
func (h *hold) heldLocked(generation uint64) bool {
	return h.held && (generation == currentHold || h.generation == generation)
}

// untilOf returns the end of the validity of the hold of the given
// generation (or the current one), or the zero time when it is not held.
func (h *hold) untilOf(generation uint64) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.heldLocked(generation) {
		return time.Time{}
	}
	return h.until
}

// isHeld reports whether a hold is held.
func (h *hold) isHeld() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

// valueOf returns a copy of the lock keys' value of the hold of the given
// generation (or the current one): its token and metadata; nil when it is
// not held.
func (h *hold) valueOf(generation uint64) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.heldLocked(generation) {
		return nil
	}
	return append([]byte(nil), h.token...)
}

// tokenOf returns the token of the hold of the given generation (or the
// current one), or "" when it is not held.
func (h *hold) tokenOf(generation uint64) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.heldLocked(generation) {
		return ""
	}
	token, _ := splitValue(h.token)
	return string(token)
}

// metadataOf returns the metadata of the hold of the given generation (or
// the current one), or "" when it is not held or has none.
func (h *hold) metadataOf(generation uint64) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.heldLocked(generation) {
		return ""
	}
	_, metadata := splitValue(h.token)
	return string(metadata)
}

// fenceOf returns the fence of the hold of the given generation (or the
// current one), or 0 when it is not held.
func (h *hold) fenceOf(generation uint64) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.heldLocked(generation) {
		return 0
	}
	return h.fence
}

// doneOf returns the Done channel of the hold of the given generation (or
// the current one): closed when it is not held or was lost.
func (h *hold) doneOf(generation uint64) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.heldLocked(generation) || h.lost {
		return closedChannel
	}
	if h.done == nil {
		h.done = make(chan struct{})
	}
	return h.done
}

// endLocked forgets the hold: Done closes, and a renewal or an extension
// in flight finds it gone. The caller holds h.mu, and removes the Mutex
// from the Client's registry and its holdEnds.
func (h *hold) endLocked() {
	if h.done != nil && !h.lost {
		close(h.done)
	}
	h.held, h.lost, h.done, h.onLost, h.writing = false, false, nil, nil, false
	h.token, h.until, h.acquired, h.fence = nil, time.Time{}, time.Time{}, 0
	h.generation++
}

// Until returns the end of the hold's validity, a reading of the Client's
// monotonic clock, or the zero time when the Mutex is not held.
// Until then, and only then, the hold is exclusive under the algorithm's
// assumptions (see the package documentation). An extension that a quorum
// confirms moves it; one that shortens the keys (see MutexOptions.Token
// and MaxHold) moves it earlier, confirmed or not. Done closes before it
// for a renewed hold, and when it passes otherwise.
func (m *Mutex) Until() time.Time {
	return m.hold.untilOf(currentHold)
}

// Token returns the hold's token, the value of the lock keys (before the
// metadata, with MutexOptions.Metadata), or "" when the Mutex is not held.
// It can resume the hold in another process with MutexOptions.Token.
func (m *Mutex) Token() string {
	return m.hold.tokenOf(currentHold)
}

// Metadata returns the hold's MutexOptions.Metadata, as the nodes keep it
// with the token, or "" when the Mutex is not held or has none.
func (m *Mutex) Metadata() string {
	return m.hold.metadataOf(currentHold)
}

// Fence returns the hold's fencing token, or 0 when the Mutex is not held
// or MutexOptions.Fencing is off. Fences of one resource strictly increase
// from hold to hold, across clients and processes, whatever set of keys
// locked it, as long as the nodes keep their data (see the package
// documentation, # Safety). Pass it to the resource with every write, and
// have the resource refuse a fence older than the newest it has seen
// (package fencedstore does that for a Redis key).
func (m *Mutex) Fence() int64 {
	return m.hold.fenceOf(currentHold)
}

// Done returns a channel that is closed when the hold ends, by a timer
// that does not wait for the renewal. With MutexOptions.AutoExtend, it
// closes two node timeouts before Until unless an extension moved Until in
// time; without, when Until passes. It closes earlier when an extension
// finds the hold gone, at Unlock, and when the Client is closed.
// docs/renewal.md lists every case. For a Mutex that is not held it
// returns a closed channel.
func (m *Mutex) Done() <-chan struct{} {
	return m.hold.doneOf(currentHold)
}

// startHold records a new hold, sets the timer of its end and starts its
// renewal. It returns the hold's generation. The nodes that confirmed the
// round counted by tally, its acquisition or its resumption, are the
// nodes the hold had; the rounds lent for it are given back.
func (m *Mutex) startHold(start, until time.Time, fence int64, tally *tally) uint64 {
	c := m.client
	h := &m.hold
	h.mu.Lock()
	h.held, h.lost = true, false
	h.token, h.acquired, h.until, h.fence, h.ttl = m.acquisition.token(), start, until, fence, m.options.TTL
	for i, node := range tally.nodes {
		h.had[i] = node.outcome == OutcomeConfirmed
		h.watching[i] = h.had[i]
	}
	// The held Mutex keeps no round: its release borrows one once it
	// ended the hold, under h.mu.
	m.giveBackRounds()
	h.generation++
	generation := h.generation
	watched := m.watched()
	if watched {
		h.watchTag = c.watcher.newWriteTag()
	}
	tag := h.watchTag
	listed := c.holds.add(m)
	m.setEndTimerLocked()
	h.mu.Unlock()
	if !listed {
		// The Client closed during the acquisition: nothing would end
		// the hold at Close any more.
		m.signalLost(generation, errClientClosed)
		return generation
	}
	if m.options.AutoExtend {
		c.renewer.schedule(renewal{mutex: m, generation: generation, due: m.nextRenewal(c.options.clock.Now(), until, m.options.TTL),
			early: renewalEarly(m.options.TTL)})
	}
	if watched {
		c.watcher.watch(m)
		m.startArming(generation, tag, allNodes)
	}
	return generation
}

// endHold ends the hold of the given generation, or the current one with
// currentHold, if it is still held: see hold.endLocked. It waits for the
// commands being sent for the hold, so that what follows (a release, the
// next acquisition) is queued behind them on every node. It returns the
// hold as it was, and whether it ended it.
func (m *Mutex) endHold(generation uint64) (ended endedHold, ok bool) {
	h := &m.hold
	m.sending.Lock()
	h.mu.Lock()
	if h.heldLocked(generation) {
		ended = endedHold{until: h.until, acquired: h.acquired, lost: h.lost}
		h.endLocked()
		m.client.ends.remove(m)
		m.client.holds.remove(m)
		ok = true
	}
	h.mu.Unlock()
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
	h := &m.hold
	h.mu.Lock()
	if !h.currentLocked(generation) || h.lost {
		h.mu.Unlock()
		return
	}
	h.lost = true
	if h.done != nil {
		close(h.done)
	}
	onLost, held := h.onLost, time.Duration(0)
	if !h.acquired.IsZero() {
		held = m.client.options.clock.Now().Sub(h.acquired)
	}
	h.mu.Unlock()
	m.client.stats.recordLost()
	if onLost != nil {
		onLost(err)
	}
	if observer := m.client.options.Observer; observer != nil {
		observer.OnLost(LostEvent{Key: m.key, Held: held, Err: err})
	}
}
