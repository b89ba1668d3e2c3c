package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/mux"
)

// Unlock releases the lock on every node. It returns nil only when a quorum
// of nodes confirmed that they released this hold while its validity had
// not ended; otherwise the error matches ErrLockLost: the hold may have
// been taken over by another client. Either way the Mutex is no longer held
// afterwards, its renewal has stopped, and it may be locked again.
func (m *Mutex) Unlock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	// The hold ends before the release is sent, and under the same lock as
	// the check: of two Unlocks that race, one ends the hold and the other
	// finds it not held; a renewal in flight finds it gone and schedules
	// nothing more. Ending it also waits for the extensions and repairs
	// being sent for it, so that the release follows them on every node.
	m.sending.Lock()
	m.mu.Lock()
	if !m.held {
		m.mu.Unlock()
		m.sending.Unlock()
		return ErrNotHeld
	}
	until, acquired := m.until, m.acquired
	m.endHoldLocked()
	m.mu.Unlock()
	m.sending.Unlock()
	defer m.giveTurn()

	c := m.client
	if err := c.misconfigured(); err != nil {
		return err
	}
	clock := c.options.Clock
	start := clock.Now()
	// A replay carries the same identity, so the nodes announce one
	// release.
	var identity [releaseIdentityLength]byte
	newReleaseIdentity(&identity)
	m.buildRelease(identity[:])
	m.tally.reset(OperationUnlock, c.need)
	c.group.Send(m.round, m.roundDeadline())
	waitErr := c.group.Wait(ctx, m.round, &m.tally)
	elapsed := clock.Now().Sub(start)
	if m.tally.got > 0 {
		c.notifier.released(m, identity[:])
	}
	m.reportNodeErrors()

	var err error
	misconfigured := c.misconfigured()
	switch {
	case !start.Before(until):
		err = fmt.Errorf("%w: the validity of %q ended %v before the unlock", ErrLockLost, m.key, start.Sub(until))
	case waitErr != nil:
		err = fmt.Errorf("redlock: unlock %q: %w: the release goes on unconfirmed: %w", m.key, waitErr, m.tally.quorumError(m.key, c.addresses, elapsed))
	case m.tally.got < c.need:
		err = m.tally.quorumError(m.key, c.addresses, elapsed)
	case misconfigured != nil:
		// A node that connected during the round showed that two
		// addresses reach one server: the count cannot be trusted.
		err = misconfigured
	}
	c.stats.recordRelease(elapsed, err == nil)
	if observer := c.options.Observer; observer != nil {
		observer.OnRelease(ReleaseEvent{Key: m.key, Got: m.tally.got, Need: c.need, Elapsed: elapsed, Held: start.Sub(acquired), Err: err})
	}
	return err
}

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
	// Extend has a round of its own: another goroutine may unlock the
	// Mutex, or lock it again, while the extension is in flight.
	m.extendMu.Lock()
	defer m.extendMu.Unlock()
	s := &m.extending
	s.prepare(m)
	m.sending.RLock()
	extension, err := m.prepareExtension(s.round, &s.tally, &s.token, currentHold)
	if err == nil {
		m.client.group.Send(s.round, m.roundDeadline())
	}
	m.sending.RUnlock()
	if err != nil {
		return err
	}
	if waitErr := m.client.group.Wait(ctx, s.round, &s.tally); waitErr != nil {
		err := m.applyExtension(extension, s.round, &s.tally, false)
		return fmt.Errorf("redlock: extend %q: %w: %w", m.key, waitErr, err)
	}
	return m.applyExtension(extension, s.round, &s.tally, false)
}

// extension is an extension round in flight.
type extension struct {
	generation uint64
	token      []byte    // the hold's token, copied when it started
	start      time.Time // by the Client's clock
	until      time.Time // the validity when it started
	ttl        time.Duration
}

// currentHold asks prepareExtension for the hold of whichever generation
// is current; generations start at 1.
const currentHold uint64 = 0

// prepareExtension checks that the hold of the given generation, or the
// current one, can be extended and writes the extension into round. The
// caller holds m.sending for reading until the round is sent: the hold
// cannot end, nor another one start, before the extension is queued on
// every node.
func (m *Mutex) prepareExtension(round *mux.Round, tally *tally, token *[MaxTokenLength]byte, generation uint64) (extension, error) {
	m.mu.Lock()
	if !m.held || (generation != currentHold && m.generation != generation) {
		m.mu.Unlock()
		return extension{}, ErrNotHeld
	}
	// The token is copied under the lock: the next hold may write a new
	// one while this extension is in flight.
	e := extension{generation: m.generation, until: m.until, token: token[:copy(token[:], m.token)]}
	acquired := m.acquired
	m.mu.Unlock()

	c := m.client
	if err := c.misconfigured(); err != nil {
		return e, err
	}
	e.start = c.options.Clock.Now()
	if !e.start.Before(e.until) {
		return e, fmt.Errorf("%w: the validity of %q ended %v before the extension", ErrLockLost, m.key, e.start.Sub(e.until))
	}
	e.ttl = m.options.TTL
	if limit := acquired.Add(m.options.MaxHold).Sub(e.start); limit < e.ttl {
		e.ttl = limit.Truncate(time.Millisecond)
	}
	if e.ttl < MinTTL || validity(e.ttl, 0, c.options.DriftFactor) <= 0 {
		return e, errMaxHold
	}
	m.buildScriptWithToken(round, extendLua, e.token, e.ttl.Milliseconds())
	tally.reset(OperationExtend, c.need)
	return e, nil
}

// applyExtension counts the replies of an extension round and moves the
// hold's validity when it succeeded. An extension shorter than the
// validity left (a resumed hold renewed with a shorter TTL, the last
// extension before MaxHold) shortens the keys on every node that applies
// it, so even when it fails the validity becomes the shorter of the two:
// its nodes may have applied it without a reply in time.
func (m *Mutex) applyExtension(e extension, round *mux.Round, tally *tally, automatic bool) error {
	c := m.client
	end := c.options.Clock.Now()
	elapsed := end.Sub(e.start)
	m.reportNodeErrorsOf(tally)
	remaining := validity(e.ttl, elapsed, c.options.DriftFactor)

	var err error
	misconfigured := c.misconfigured()
	switch {
	case misconfigured != nil:
		// A node that connected during the round may have shown that two
		// addresses reach one server: the count cannot be trusted.
		err = misconfigured
	case tally.got >= c.need && end.Before(e.until) && remaining > 0:
		// A release of this hold is queued behind the repair on every
		// node, so the repair cannot bring back a key it removed.
		m.sending.RLock()
		m.mu.Lock()
		repair := false
		if m.held && m.generation == e.generation {
			m.moveUntilLocked(end.Add(remaining))
			repair = m.prepareRepairLocked(e, round, tally)
		}
		m.mu.Unlock()
		if repair {
			c.group.Send(round, m.roundDeadline())
			c.group.Discard(round)
		}
		m.sending.RUnlock()
	case tally.got >= c.need:
		err = fmt.Errorf("%w: the extension of %q took %v and ended after the validity", ErrLockLost, m.key, elapsed)
	default:
		err = tally.quorumError(m.key, c.addresses, elapsed)
		if tally.refused > len(tally.nodes)-c.need {
			// A quorum of nodes said the hold is gone: it cannot come back.
			m.signalLost(e.generation, err)
		}
	}
	if err != nil {
		shortest := e.start.Add(validity(e.ttl, 0, c.options.DriftFactor))
		m.mu.Lock()
		if m.held && m.generation == e.generation && shortest.Before(m.until) {
			m.moveUntilLocked(shortest)
		}
		m.mu.Unlock()
	}
	c.stats.recordExtend(elapsed, err == nil)
	if observer := c.options.Observer; observer != nil {
		observer.OnExtend(ExtendEvent{Key: m.key, Automatic: automatic, Got: tally.got, Need: c.need, Elapsed: elapsed, Validity: remaining, Err: err})
	}
	return err
}

// repairLua is sent with EVAL: its replies are not awaited, so a NOSCRIPT
// could not be answered.
var repairLua = newScript(repairScript)

// prepareRepairLocked records the nodes that confirmed an extension of the
// current hold as nodes the hold had, and writes into round the repair of
// the nodes the hold had that answered that a key was missing (a node
// that restarted empty, an evicted key): it sets every key of the hold
// again, the ones the node kept included, unless one holds another token.
// It reports whether there is a repair to send; the caller sends it
// without awaiting its replies. The caller holds m.mu, and m.sending for
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
func (m *Mutex) prepareRepairLocked(e extension, round *mux.Round, tally *tally) bool {
	needed := false
	for i, node := range tally.nodes {
		switch {
		case node.outcome == OutcomeAcquired:
			m.had[i] = true
		case node.outcome == OutcomeMissing && m.had[i]:
			needed = true
		}
	}
	if !needed {
		return false
	}
	round.SetEval(repairLua, len(m.keys), 2)
	m.appendKeys(round)
	round.AppendBulk(e.token)
	round.AppendInt(e.ttl.Milliseconds())
	for i, node := range tally.nodes {
		if node.outcome != OutcomeMissing || !m.had[i] {
			round.Skip(i)
		}
	}
	return true
}

// extensionState is what a sender of extensions keeps of a Mutex between
// sending an extension and gathering its replies: a round of its own, so
// that an extension never shares one with an acquisition or a release.
type extensionState struct {
	token     [MaxTokenLength]byte
	round     *mux.Round
	tally     tally
	extension extension
}

// prepare makes the round and the tally on first use.
func (s *extensionState) prepare(m *Mutex) {
	if s.round == nil {
		s.round = m.client.group.NewRound()
		s.tally.nodes = make([]nodeOutcome, m.client.group.Len())
		s.tally.keys = len(m.keys)
	}
}

// startRenewal sends the automatic extension of the hold of the given
// generation. It reports false when there is nothing to gather: the hold
// ended, or cannot be extended any more (then its end is scheduled).
func (m *Mutex) startRenewal(generation uint64) bool {
	r := &m.renewal
	r.prepare(m)
	m.sending.RLock()
	e, err := m.prepareExtension(r.round, &r.tally, &r.token, generation)
	if err == nil {
		r.extension = e
		m.client.group.Send(r.round, m.roundDeadline())
	}
	m.sending.RUnlock()
	// Otherwise the hold ended (ErrNotHeld), or it expired, reached
	// MaxHold or its Client closed: nothing more to renew. The timer of the
	// hold's end ends it, a loss margin before its validity, or
	// Client.Close did.
	return err == nil
}

// finishRenewal gathers the replies of an automatic extension and
// schedules the next one (see nextRenewal), sooner after a failure, at the
// retry delay, as long as an attempt can still finish before the hold's end
// is signalled. When none can, the hold is lost now, before its timer
// fires, so that its holder stops as early as possible.
func (m *Mutex) finishRenewal(generation uint64) {
	r := &m.renewal
	m.client.group.Wait(context.Background(), r.round, &r.tally)
	err := m.applyExtension(r.extension, r.round, &r.tally, true)
	c := m.client
	now := c.options.Clock.Now()
	m.mu.Lock()
	current, until := m.held && m.generation == generation && !m.lost, m.until
	m.mu.Unlock()
	if !current {
		return
	}
	var due time.Time
	switch {
	case err == nil && r.extension.ttl < m.options.TTL:
		// MaxHold cut this extension short: it was the last one, and the
		// timer of the hold's end ends it.
		return
	case err == nil:
		due = m.nextRenewal(now, until)
	default:
		latest := m.latestRenewal(until)
		if latest.Before(now) {
			m.signalLost(generation, err)
			return
		}
		due = now.Add(m.retryDelay())
		if latest.Before(due) {
			due = latest
		}
	}
	c.renewer.schedule(renewal{mutex: m, generation: generation, due: due})
}

// nextRenewal returns when the next automatic extension of a hold valid
// until the given moment is due, by the Client's clock: a third of the TTL
// after now, or sooner when the validity left is short (a resumed hold),
// so that an extension that takes a whole node timeout still finishes
// before the hold's end is signalled. It may be now.
func (m *Mutex) nextRenewal(now, until time.Time) time.Time {
	due := now.Add(m.options.TTL / 3)
	if latest := m.latestRenewal(until); latest.Before(due) {
		return latest
	}
	return due
}

// latestRenewal is the last moment at which an extension of a hold valid
// until the given moment can start and, taking a whole node timeout,
// finish before the hold's end is signalled, a loss margin before until.
func (m *Mutex) latestRenewal(until time.Time) time.Time {
	return until.Add(-m.lossMargin() - m.client.options.NodeTimeout)
}

// Until returns the end of the hold's validity, a reading of the Client's
// clock (Options.Clock), or the zero time when the Mutex is not held.
// Until then, and only then, the hold is exclusive under the algorithm's
// assumptions (see the package documentation). An extension that a quorum
// confirms moves it; one that shortens the keys (see MutexOptions.Token
// and MaxHold) moves it earlier, confirmed or not. Done closes before it
// for a renewed hold, and when it passes otherwise.
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

// Done returns a channel that is closed when the hold ends, by a timer of
// the hold's own that does not wait for the renewal:
//   - with MutexOptions.AutoExtend, two node timeouts before the end of
//     the validity (Until) unless an extension moved it in time: when the
//     renewal cannot reach a quorum in time, when the hold reaches
//     MaxHold, and for a resumed hold that cannot be renewed; earlier
//     when the renewal gives up, once no attempt can finish by then, or
//     when an extension finds that a quorum of nodes no longer holds the
//     hold;
//   - without AutoExtend, when the validity passes (Until, or just after:
//     the timer fires then), or earlier when an Extend finds that a quorum
//     of nodes no longer holds the hold;
//   - at Unlock, and when the Client is closed.
//
// For a Mutex that is not held it returns a closed channel.
func (m *Mutex) Done() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held || m.lost {
		return closedChannel
	}
	if m.done == nil {
		m.done = make(chan struct{})
	}
	return m.done
}

// startHold records a new hold, sets the timer of its end and starts its
// renewal. It returns the hold's generation. The nodes that confirmed the
// round in m.tally, its acquisition or its resumption, are the nodes the
// hold had.
func (m *Mutex) startHold(start, until time.Time, fence int64) uint64 {
	c := m.client
	m.mu.Lock()
	m.held, m.lost = true, false
	m.token, m.acquired, m.until, m.fence = m.tokenBytes[:m.tokenSize], start, until, fence
	for i, node := range m.tally.nodes {
		m.had[i] = node.outcome == OutcomeAcquired
	}
	m.generation++
	generation := m.generation
	listed := c.holds.add(m)
	m.setEndTimerLocked()
	m.mu.Unlock()
	if !listed {
		// The Client closed during the acquisition: nothing would end
		// the hold at Close any more.
		m.signalLost(generation, errClientClosed)
		return generation
	}
	if m.options.AutoExtend {
		c.renewer.schedule(renewal{mutex: m, generation: generation, due: m.nextRenewal(c.options.Clock.Now(), until)})
	}
	return generation
}

// signalLost ends a hold that can no longer be proven, once: it closes
// Done and cancels the context of Client.Do with err as the cause, made to
// match ErrLockLost if it does not (a renewal that found the Client
// closed). The Mutex stays held until Unlock.
func (m *Mutex) signalLost(generation uint64, err error) {
	if !errors.Is(err, ErrLockLost) {
		err = fmt.Errorf("%w: %w", ErrLockLost, err)
	}
	m.mu.Lock()
	if !m.held || m.generation != generation || m.lost {
		m.mu.Unlock()
		return
	}
	m.lost = true
	if m.done != nil {
		close(m.done)
	}
	onLost, held := m.onLost, time.Duration(0)
	if !m.acquired.IsZero() {
		held = m.client.options.Clock.Now().Sub(m.acquired)
	}
	m.mu.Unlock()
	m.client.stats.recordLost()
	if onLost != nil {
		onLost(err)
	}
	if observer := m.client.options.Observer; observer != nil {
		observer.OnLost(LostEvent{Key: m.key, Held: held, Err: err})
	}
}

// endHoldLocked forgets the hold: its timer stops, and its renewal finds
// it gone. The caller holds m.mu.
func (m *Mutex) endHoldLocked() {
	if m.done != nil && !m.lost {
		close(m.done)
	}
	if m.endTimer != nil {
		m.endTimer.Stop()
	}
	m.client.holds.remove(m)
	m.held, m.lost, m.done, m.onLost = false, false, nil, nil
	m.token, m.until, m.acquired, m.fence = nil, time.Time{}, time.Time{}, 0
	m.generation++
}
