package redlock

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// The causes that end a Lock's wait for a release early (waitState.causes).
const (
	// causeLook asks for an attempt now: a release of one of the keys was
	// announced, the subscription was confirmed, or renewed after a
	// reconnection.
	causeLook uint32 = 1 << iota
	// causeShorten says that too few nodes can notify any more: the wait
	// ends at the retry delay, not at the fallback.
	causeShorten
	// causeConfirmedLate says that a node confirmed the subscription after
	// a quorum had: it ends the wait of a Lock whose last attempt was a
	// split vote (waitState.split), which may have met a release that this
	// node announced before it was subscribed (see notifier.confirmed).
	causeConfirmedLate
)

// waitState is what a Mutex keeps for the waits of a Lock between two
// attempts. Its fields belong to the goroutine that has the turn, except
// where they say otherwise.
type waitState struct {
	timer *time.Timer
	// failed is the tally of the last failed attempt, and failedElapsed
	// its time: the error a Lock returns is made from them only if it
	// returns, so that a Lock that waits allocates nothing per attempt.
	failed        tally
	failedElapsed time.Duration
	channels      []string // the release channels of the keys: made on first use, read and written under notifier.mu

	// causes holds the causes (causeLook, causeShorten) that came since
	// the last attempt began, and notify a token when one came: the
	// notifier sets them (wake), the Lock takes them (sleep, startAttempt).
	causes atomic.Uint32
	notify chan struct{}

	// listening is set by the Lock while it waits for a release; the
	// notifier clears it when it picks this waiter for a release, so that
	// the next release picks another one.
	listening atomic.Bool

	// releaseWakes counts the releases this waiter was picked for that no
	// completed attempt has followed yet: a waiter that leaves without the
	// lock passes such a wake-up on (notifier.unregister).
	releaseWakes atomic.Int32

	// unheardBefore is notifier.unheard when the last attempt before the
	// waiter registered began: a release announced on an idle channel
	// after it makes the waiter look once more (notifier.register).
	unheardBefore uint64

	// split is set by the Lock before it waits when its last attempt won
	// some nodes but no quorum: a release may have reached some nodes
	// before it and the others after it.
	split bool

	// Guarded by notifier.mu. subscribing is set while the waiter waits
	// for a quorum of nodes to confirm its subscriptions, and then looks
	// once; wokenOn is the channel of the last release it was picked for,
	// and pickedFor that release's hash (releaseHash).
	subscribing bool
	wokenOn     string
	pickedFor   uint64
	// lineID is a fair Mutex's identity in line while lined is set, as
	// the releases name the first in line (see notifier.wakeFirstInLine).
	lineID [waiterIDLength]byte
	lined  bool

	// line is a fair Mutex's place in line while its Lock waits.
	line fairLine

	// subscribed is set while a Lock or an Acquire is registered with the
	// notifier; answered counts the release wake-ups its attempt answers.
	subscribed bool
	answered   int32
}

// wake ends the wait of a Lock for the given cause, now or, if it is not
// waiting yet, at its next wait.
func (m *Mutex) wake(cause uint32) {
	m.wait.causes.Or(cause)
	select {
	case m.wait.notify <- struct{}{}:
	default:
	}
}

// startAttempt forgets the causes that came before an attempt of a Lock
// that waits: the attempt answers them. It returns the release wake-ups
// the attempt answers, to be taken from releaseWakes once it completed.
func (m *Mutex) startAttempt() int32 {
	w := &m.wait
	w.causes.Store(0)
	select {
	case <-w.notify:
	default:
	}
	return w.releaseWakes.Load()
}

// beforeAttempt readies the wait of a Lock or an Acquire for an attempt:
// the attempt answers the wake-ups that came before it.
func (m *Mutex) beforeAttempt() {
	w := &m.wait
	if w.subscribed {
		w.answered = m.startAttempt()
	} else {
		w.unheardBefore = m.client.notifier.unheard.Load()
	}
}

// afterFailedAttempt takes the release wake-ups the failed attempt
// answered: they are not passed on.
func (m *Mutex) afterFailedAttempt() {
	if m.wait.subscribed {
		m.wait.releaseWakes.Add(-m.wait.answered)
	}
}

// waitToRetry waits after the failed attempt number of a Lock or an
// Acquire. held says that somebody holds what it asked: it listens for
// the release. split says that it won a part, and backoff that it backs
// off at random unless a release comes. refusedFor bounds a wait for a
// release, when not 0.
func (m *Mutex) waitToRetry(ctx context.Context, number int, held, split, backoff bool, refusedFor time.Duration) error {
	w := &m.wait
	if held && !w.subscribed {
		m.startAttempt() // forget the wake-ups that came after an earlier wait's last attempt
		w.subscribed = m.client.notifier.register(m)
	}
	mode := waitDeaf
	if w.subscribed {
		switch {
		case backoff:
			mode = waitBackoff
		case held:
			mode = waitRelease
		}
	}
	w.split = split
	return m.sleep(ctx, m.retryDelay(number), mode, refusedFor)
}

// stopWaiting unregisters a Lock or an Acquire from the notifier, if it
// registered, as it returns or wins.
func (m *Mutex) stopWaiting(acquired bool) {
	if m.wait.subscribed {
		m.client.notifier.unregister(m, acquired)
		m.wait.subscribed = false
	}
}

// releasedChannels returns the channels on which the releases of the
// Mutex's keys are announced, one per key. The caller holds notifier.mu.
func (m *Mutex) releasedChannels() []string {
	if m.wait.channels == nil {
		m.wait.channels = make([]string, len(m.keys))
		for i, key := range m.keys {
			m.wait.channels[i] = m.client.releasedChannel(key)
		}
	}
	return m.wait.channels
}

// retryDelay draws the retry delay d after the failed attempt number of a
// Lock (from 1): uniformly from the retry range, so that competing clients
// fall out of step; with MutexOptions.RetryBackoff, from [b/2, b], where
// b doubles with each attempt from RetryDelayMin up to RetryDelayMax.
func (m *Mutex) retryDelay(number int) time.Duration {
	low, high := m.options.RetryDelayMin, m.options.RetryDelayMax
	if m.options.RetryBackoff {
		bound := low
		for i := 1; i < number && bound < high; i++ {
			bound *= 2
		}
		low, high = min(bound, high)/2, min(bound, high)
	}
	if high <= low {
		return low
	}
	return low + rand.N(high-low+1)
}

// waitMode says how a Lock waits between two attempts (Mutex.sleep).
type waitMode uint8

const (
	// waitDeaf waits for the retry delay; announced releases do not end
	// it.
	waitDeaf waitMode = iota
	// waitBackoff waits for the retry delay, or until a release of one of
	// the keys is announced: the backoff after a split vote, which may
	// have met a release that reached some nodes before the attempt and
	// the others after it.
	waitBackoff
	// waitRelease waits for the release of one of the keys, at most the
	// retry delay times the notifier's fallback factor.
	waitRelease
)

// sleep waits between two attempts of Lock, on a timer the Mutex reuses,
// as Options.RetryDelayMin says: for the retry delay d, as mode says. A
// waitRelease wait lasts at most d times the notifier's fallback factor,
// or refusedFor when it is not 0 (the time the last attempt's nodes said
// they would go on refusing), and d once too few nodes can notify
// (causeShorten). A causeLook ends a waitBackoff or waitRelease wait at
// once; ctx and Client.Close end any wait.
func (m *Mutex) sleep(ctx context.Context, d time.Duration, mode waitMode, refusedFor time.Duration) error {
	w := &m.wait
	bound := d
	if mode == waitRelease {
		bound *= m.client.notifier.fallback()
		if refusedFor > 0 && refusedFor < bound {
			bound = refusedFor
		}
	}
	if w.timer == nil {
		w.timer = time.NewTimer(bound)
	} else {
		w.timer.Reset(bound)
	}
	defer w.timer.Stop()
	if mode == waitDeaf {
		select {
		case <-w.timer.C:
			return nil
		case <-m.client.closing:
			return nil // the next attempt returns ErrClosed
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	start := time.Now()
	w.listening.Store(true)
	defer w.listening.Store(false)
	for {
		causes := w.causes.Swap(0)
		if causes&causeLook != 0 || (causes&causeConfirmedLate != 0 && w.split) {
			return nil
		}
		if causes&causeShorten != 0 && bound > d {
			bound = d
			w.timer.Reset(d - time.Since(start))
		}
		select {
		case <-w.timer.C:
			return nil
		case <-w.notify:
		case <-m.client.closing:
			return nil // the next attempt returns ErrClosed
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
