package redlock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/round"
)

// Extend renews the hold for another TTL from now, bounded by
// MutexOptions.MaxHold. It counts only if a quorum of nodes confirmed it
// before the current validity ended; the new validity is measured from the
// start of the extension. An extension that fails leaves the hold with its
// current validity, or with the extension's when that is shorter (nodes
// that did not answer in time may have applied it), and its error matches
// ErrLockLost. An extension asked for after the validity ended fails at
// once.
func (m *Mutex) Extend(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	return m.extend(ctx, currentHold, 0)
}

// ExtendFor extends the hold as Extend does, for ttl instead of the
// Mutex's TTL, and makes ttl the hold's TTL: the renewal goes on with it
// (MutexOptions.AutoExtend), a third of it after this extension. A TTL
// shorter than the validity left shortens the hold. The TTL must be valid
// as MutexOptions.TTL says (at least MinTTL, above the drift allowance,
// at least five node timeouts for a renewed hold), or ExtendFor fails with
// ErrInvalidOptions and leaves the hold as it was; MaxHold still bounds
// the hold.
func (m *Mutex) ExtendFor(ctx context.Context, ttl time.Duration) error {
	if m.err != nil {
		return m.err
	}
	if ttl <= 0 {
		return invalidOption("the TTL of ExtendFor", ttl, "is not positive")
	}
	check := m.options()
	check.TTL = ttl
	if _, err := check.withDefaults(m.client.options); err != nil {
		return err
	}
	return m.extend(ctx, currentHold, ttl.Truncate(time.Millisecond))
}

// extend extends the hold of the given generation, or the current one, for
// ttl, or for the hold's TTL when ttl is 0.
func (m *Mutex) extend(ctx context.Context, generation uint64, ttl time.Duration) error {
	// Extend has a round of its own: another goroutine may unlock the
	// Mutex, or lock it again, while the extension is in flight.
	x := m.extender()
	x.mu.Lock()
	defer x.mu.Unlock()
	e, err := m.sendExtension(x, generation, ttl)
	if err != nil {
		return err
	}
	if waitErr := m.gather(ctx, x.round); waitErr != nil {
		err := m.applyExtension(e, x.round, false)
		return fmt.Errorf("redlock: extend %q: %w: %w", m.key, waitErr, err)
	}
	return m.applyExtension(e, x.round, false)
}

// extender returns the extender of Extend's callers, made on the first
// Extend: a Mutex whose holds are only renewed automatically keeps none.
func (m *Mutex) extender() *extender {
	if x := m.extending.Load(); x != nil {
		return x
	}
	m.extending.CompareAndSwap(nil, &extender{}) // a racing caller's may win
	return m.extending.Load()
}

// extender is what a sender of extensions keeps between sending an
// extension and gathering its replies: a round of its own, so that an
// extension never shares one with an acquisition or a release, and the
// token of the hold it extends. Each Mutex has one for Extend's callers;
// the renewer has one per extension of its largest batch, which serve
// the holds of every Mutex of the Client in turn.
type extender struct {
	mu       sync.Mutex // serializes Extend's callers; the renewer needs none
	token    []byte     // grown to the longest token extended, then reused
	round    *round.Round
	inFlight extension // the renewer's extension between send and gather
	// batched makes the extension wait in the connections' buffers: the
	// renewer writes a whole batch at once (mux.Group.Flush).
	batched bool
}

// extension is an extension round in flight.
type extension struct {
	generation uint64
	token      []byte    // the hold's token, copied when it started
	start      time.Time // by the Client's clock
	until      time.Time // the validity when it started
	ttl        time.Duration
	watchTag   uint64 // the extension's tag as an own write of a watched hold
}

// sendExtension checks that the hold of the given generation, or the
// current one, can be extended, and sends its extension on x's round.
// The hold cannot end, nor another one start, before the extension is
// queued on every node (see Mutex.sending).
func (m *Mutex) sendExtension(x *extender, generation uint64, ttl time.Duration) (extension, error) {
	if x.round == nil {
		x.round = m.client.newNodeRound()
	}
	var begun time.Time
	if q := m.client.quarantine; q != nil {
		// The markers are read before the sending lock, which an Unlock
		// waits for; the extension's validity counts from before the
		// read, which can last a node timeout.
		begun = m.client.options.clock.Now()
		q.Verify(context.Background())
	}
	m.sending.RLock()
	defer m.sending.RUnlock()
	h := &m.hold
	h.Mu.Lock()
	if !h.HeldLocked(generation) {
		h.Mu.Unlock()
		return extension{}, ErrNotHeld
	}
	// The token is copied under the lock: the next hold may write a new
	// one while this extension is in flight.
	x.token = append(x.token[:0], h.Token...)
	e := extension{generation: h.Generation, until: h.Until, token: x.token}
	acquired := h.Acquired
	if ttl != 0 {
		// The hold's TTL from now on: the renewal goes on with it.
		h.TTL = ttl
		if int64(ttl) > h.LongestTTL.Load() {
			h.LongestTTL.Store(int64(ttl))
		}
	}
	holdTTL := h.TTL
	if m.watched() {
		// The extension changes the keys: their changes reported from
		// now on under an older tag are its own (see watcher).
		h.WatchTag, h.Writing = m.client.watcher.NewWriteTag(), true
		e.watchTag = h.WatchTag
	}
	h.Mu.Unlock()

	c := m.client
	if err := c.usable(); err != nil {
		return e, err
	}
	e.start = c.options.clock.Now()
	if !e.start.Before(e.until) {
		return e, fmt.Errorf("%w: the validity of %q ended %v before the extension", ErrLockLost, m.key, e.start.Sub(e.until))
	}
	if !begun.IsZero() {
		e.start = begun
	}
	e.ttl = holdTTL
	if limit := acquired.Add(m.maxHold).Sub(e.start); limit < e.ttl {
		e.ttl = limit.Truncate(time.Millisecond)
	}
	if e.ttl < MinTTL || round.Validity(e.ttl, 0, c.options.DriftFactor) <= 0 {
		return e, errMaxHold
	}
	m.start(x.round, round.Extend, e.token, e.ttl.Milliseconds(), nil)
	if e.watchTag != 0 {
		if s := c.notifier.TrackingSubscriber(); s != nil {
			// The write arms the keys on each node that tracks (see watcher).
			x.round.Mux.TrackOn(s, e.watchTag, m.keys)
		}
	}
	if x.batched {
		m.queue(x.round)
	} else {
		m.post(x.round)
	}
	return e, nil
}

// applyExtension counts the replies of an extension round and moves the
// hold's validity when it succeeded. An extension shorter than the
// validity left (a resumed hold renewed with a shorter TTL, the last
// extension before MaxHold) shortens the keys on every node that applies
// it, so even when it fails the validity becomes the shorter of the two:
// its nodes may have applied it without a reply in time.
func (m *Mutex) applyExtension(e extension, r *round.Round, automatic bool) error {
	c := m.client
	tally := &r.Tally
	end := c.options.clock.Now()
	elapsed := end.Sub(e.start)
	remaining := round.Validity(e.ttl, elapsed, c.options.DriftFactor)
	h := &m.hold
	if e.watchTag != 0 {
		h.Mu.Lock()
		if h.WatchTag == e.watchTag {
			h.Writing = false // the write is over: its nodes may be armed
		}
		h.Mu.Unlock()
	}

	armed := armedByExtension(r)
	var err error
	unusable := c.usable()
	switch {
	case unusable != nil:
		// A node that connected during the round may have shown that two
		// addresses reach one server: the count cannot be trusted.
		err = unusable
	case tally.Got >= c.need && end.Before(e.until) && remaining > 0:
		// A release of this hold is queued behind the repair on every
		// node, so the repair cannot bring back a key it removed.
		m.sending.RLock()
		h.Mu.Lock()
		repair, arm := false, false
		if h.CurrentLocked(e.generation) {
			m.moveUntilLocked(end.Add(remaining))
			repair = m.prepareRepairLocked(e, r)
			if watch := m.watched() && h.WatchTag == e.watchTag; watch {
				m.watchNodesLocked(tally)
				arm = !armed
			}
		}
		h.Mu.Unlock()
		if repair {
			m.send(r)
		}
		m.sending.RUnlock()
		switch {
		case arm && automatic:
			c.renewer.armLater(m, e.generation, e.watchTag, tally) // on the renewer's goroutine
		case arm:
			m.startArming(e.generation, e.watchTag, allNodes, unsureNodes(tally, nil))
		}
	case tally.Got >= c.need:
		err = fmt.Errorf("%w: the extension of %q took %v and ended after the validity", ErrLockLost, m.key, elapsed)
	default:
		err = quorumError(tally, m.key, c.addresses, elapsed)
		if tally.Refused > len(tally.Nodes)-c.need {
			// A quorum of nodes said the hold is gone: it cannot come back.
			m.signalLost(e.generation, err)
		}
	}
	if err != nil {
		shortest := e.start.Add(round.Validity(e.ttl, 0, c.options.DriftFactor))
		h.Mu.Lock()
		if h.CurrentLocked(e.generation) && shortest.Before(h.Until) {
			m.moveUntilLocked(shortest)
		}
		h.Mu.Unlock()
	}
	c.stats.recordExtend(elapsed, err == nil)
	if observer := c.options.Observer; observer != nil {
		observer.OnExtend(ExtendEvent{Key: m.key, Automatic: automatic, Got: tally.Got, Need: c.need, Elapsed: elapsed, Validity: remaining, Err: err})
	}
	return err
}

// prepareRepairLocked records the nodes that confirmed an extension of the
// current hold as nodes the hold had, and writes into r the repair of the
// nodes the hold had that answered that a key was missing (a node that
// restarted empty, an evicted key): it sets every key of the hold again,
// the ones the node kept included, unless one holds another token. It
// reports whether there is a repair to send; the caller sends it without
// awaiting its replies. The caller holds m.hold.Mu, and m.sending for
// reading until the repair is sent.
//
// A repair follows an extension that a quorum confirmed within the
// validity: no other client can hold these keys, and the repaired node
// counts again for the next extension. It restores a node but never
// revives a lost hold (redsync #186). It goes only to nodes the hold had,
// those that confirmed its acquisition, its resumption or an extension
// that a quorum confirmed: a node that refused the acquisition, or whose
// answer was never counted, gave no vote to this hold and gets no key
// from it.
func (m *Mutex) prepareRepairLocked(e extension, r *round.Round) bool {
	had := m.hold.Had
	needed := false
	for i, node := range r.Tally.Nodes {
		switch {
		case node.Outcome == round.OutcomeConfirmed:
			had[i] = true
		case node.Outcome == round.OutcomeMissing && had[i]:
			needed = true
		}
	}
	if !needed {
		return false
	}
	for i, node := range r.Tally.Nodes {
		if node.Outcome != round.OutcomeMissing || !had[i] {
			r.Mux.Skip(i)
		}
	}
	m.start(r, round.Repair, e.token, e.ttl.Milliseconds(), nil)
	return true
}
