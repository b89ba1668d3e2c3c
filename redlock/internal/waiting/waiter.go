package waiting

import (
	"context"
	"sync/atomic"
	"time"
)

// The causes that end a wait early (Waiter.causes).
const (
	// causeLook asks for an attempt now: a release, or a subscription
	// confirmed or renewed.
	causeLook uint32 = 1 << iota
	// causeShorten ends a wait at the retry delay: too few nodes notify.
	causeShorten
	// causeConfirmedLate ends the wait after a split vote (Waiter.split):
	// a node confirmed the subscription after a quorum had.
	causeConfirmedLate
)

// Waiter is the wait state of one lock: what its Lock or Acquire keeps
// between two attempts. Its fields belong to the goroutine that has the
// lock's turn, except where they say otherwise. Init readies it.
type Waiter struct {
	notifier *Notifier
	lock     Lock
	timer    *time.Timer

	// causes holds the causes that came since the last attempt began, and
	// notify a token when one came: wake sets them, the waiter takes them.
	causes        atomic.Uint32
	listening     atomic.Bool  // waits for a release; cleared when picked for one
	releaseWakes  atomic.Int32 // releases picked for that no completed attempt followed
	answered      int32        // the release wake-ups the attempt under way answers
	notify        chan struct{}
	unheardBefore uint64 // Notifier.unheard when the attempt before registering began
	split         bool   // the last attempt won a part, not all it needed
	subscribed    bool   // registered with the notifier
	retriedNow    bool   // the Retry under way retried at once (RetriedNow)

	// Guarded by Notifier.mu. subscribing is set until a quorum confirms
	// the subscriptions; wokenOn and pickedFor are the channel and hash of
	// the last release picked for; lineID is a fair lock's identity in
	// line while lined is set. Only the turn's goroutine writes lined.
	subscribing bool
	lined       bool
	wokenOn     string
	pickedFor   uint64
	lineID      [WaiterIDLength]byte
}

// Kind is what a lock's holds are, as far as waking its waiters goes.
type Kind uint8

const (
	// KindPlain is a plain lock, or a Semaphore's slots.
	KindPlain Kind = iota
	// KindWrite is a read/write lock's writer: it is woken first.
	KindWrite
	// KindRead is a read/write lock's reader: the readers are woken together.
	KindRead
	// KindFair is a fair lock: a release wakes the first in line only.
	KindFair
)

// Lock is what a Waiter waits for, as the room sees it.
type Lock interface {
	// Kind returns what the lock's holds are.
	Kind() Kind
	// ReleasedChannels returns the channels that announce the releases of
	// the lock's keys. The room calls it with its mutex held.
	ReleasedChannels() []string
}

// WaiterIDLength is the length of a fair lock's waiter identity.
const WaiterIDLength = 16

// Init readies w to wait for lock in the room of notifier. A Waiter may
// be readied again for another lock once its Retry returned: it keeps its
// channel and timer.
func (w *Waiter) Init(notifier *Notifier, lock Lock) {
	w.notifier, w.lock, w.retriedNow = notifier, lock, false
	if w.notify == nil {
		w.notify = make(chan struct{}, 1)
	}
}

// Detach forgets w's lock, so that a spare Waiter keeps none alive. The
// caller's Retry returned and w is out of line.
func (w *Waiter) Detach() { w.lock = nil }

// wake ends the wait of a Lock for the given cause, now or, if it is not
// waiting yet, at its next wait.
func (w *Waiter) wake(cause uint32) {
	w.causes.Or(cause)
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// startAttempt forgets the causes that came before an attempt of a Lock
// that waits: the attempt answers them. It returns the release wake-ups
// the attempt answers, to be taken from releaseWakes once it completed.
func (w *Waiter) startAttempt() int32 {
	w.causes.Store(0)
	select {
	case <-w.notify:
	default:
	}
	return w.releaseWakes.Load()
}

// waitMode says how a Lock waits between two attempts (Waiter.sleep).
type waitMode uint8

const (
	waitDeaf    waitMode = iota // the retry delay; releases do not end it
	waitBackoff                 // the retry delay, or until a release: after a split vote
	waitRelease                 // until a release, at most the fallback
)

// sleep waits for the retry delay d, as mode says, on a reused timer. A
// waitRelease wait lasts at most d times the fallback factor, or
// refusedFor when not 0, and d after causeShorten. A causeLook ends a
// waitBackoff or waitRelease wait. ctx and Config.Closing end any wait.
func (w *Waiter) sleep(ctx context.Context, d time.Duration, mode waitMode, refusedFor time.Duration) error {
	bound := d
	if mode == waitRelease {
		bound *= w.notifier.fallback()
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
		case <-w.notifier.config.Closing:
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
		case <-w.notifier.config.Closing:
			return nil // the next attempt returns ErrClosed
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// AttemptBegan notes, for a waiter whose first attempt was made before it
// had the turn, the value of Notifier.Unheard when that attempt began.
func (w *Waiter) AttemptBegan(unheard uint64) { w.unheardBefore = unheard }
