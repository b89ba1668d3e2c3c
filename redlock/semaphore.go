package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/redlock/internal/waiting"
)

// MaxSemaphoreLimit is the largest limit of a Semaphore.
const MaxSemaphoreLimit = 1024

// Semaphore admits at most limit holders at once across the Client's
// nodes. A permit is a hold like a Mutex's, with its validity, Done,
// renewal and fence. The semaphore is limit independent Redlock slots,
// the keys NAME:permit:0 to NAME:permit:(limit−1), each as safe as a
// Mutex. An uncontended Acquire costs what a Lock does, and a blocked one
// waits as a Lock does. A Semaphore is safe for concurrent use.
// docs/lock-family.md gives the rules and the costs.
type Semaphore struct {
	name  string
	slots []*Mutex
	// waiter is never locked: a Mutex over every slot's key, which an
	// Acquire that waits registers with the notifier to be woken by the
	// release of any slot. Its turn is the turn to wait.
	waiter *Mutex
	err    error // why the Semaphore cannot be used, or nil
	// next is the slot the next TryAcquire tries first; crowded is set
	// while the first slot tried is unlikely to be free (see tryAcquire).
	next    atomic.Uint32
	crowded atomic.Bool
	// scratch holds the *permitCandidates of the attempts under way, and
	// waits the *acquireAttempts of the Acquires.
	scratch, waits sync.Pool
}

// NewSemaphore returns a Semaphore named name that admits at most limit
// holders at once. Its permits are holds with options, whose Keys and
// Token must be empty: a permit is one key, and a token would be shared
// by all of them. The Semaphore of an invalid name, limit or options
// returns the error, matching ErrInvalidOptions, from every call. Every
// client must give one name the same limit: a client with a larger limit
// uses more slots and admits more holders.
func (c *Client) NewSemaphore(name string, limit int, options MutexOptions) *Semaphore {
	s := &Semaphore{name: name}
	switch {
	case limit < 1 || limit > MaxSemaphoreLimit:
		s.err = invalidOption("limit", limit, "is not in [1, "+strconv.Itoa(MaxSemaphoreLimit)+"]")
	case len(options.Keys) > 0:
		s.err = invalidOption("MutexOptions.Keys", options.Keys, "is not empty: a permit is one key")
	case options.Token != "":
		s.err = invalidOption("MutexOptions.Token", options.Token, "is set: the permits of a Semaphore have tokens of their own")
	}
	if s.err != nil {
		return s
	}
	s.next.Store(uint32(rand.N(limit))) // the clients of one name start apart
	s.slots = make([]*Mutex, limit)
	for i := range s.slots {
		s.slots[i] = newMutex(c, permitKey(name, i), options)
		if err := s.slots[i].err; err != nil {
			s.err = err
			return s
		}
	}
	waiting := options
	for _, slot := range s.slots[1:] {
		waiting.Keys = append(waiting.Keys, slot.key)
	}
	if s.err = c.sameSlot([]string{s.slots[0].key}, waiting.Keys); s.err != nil {
		return s // one script tries several permits at once
	}
	s.waiter = newMutex(c, s.slots[0].key, waiting)
	s.waits.New = func() any { return &acquireAttempts{semaphore: s} }
	s.scratch.New = func() any {
		p := &permitCandidates{slots: make([]int, 0, limit), mutexes: make([]*Mutex, 0, limit), keys: make([]string, 0, limit)}
		if options.Fencing {
			p.fences = make([]string, 0, limit)
		}
		return p
	}
	return s
}

// permitKey returns the key of slot i of the semaphore name, which the
// inspect package shares.
func permitKey(name string, slot int) string {
	return naming.PermitKey(name, slot)
}

// Limit returns the most holders the Semaphore admits at once.
func (s *Semaphore) Limit() int { return len(s.slots) }

// TryAcquire makes one attempt to win a permit (see Semaphore). It fails
// with an error matching ErrNotAcquired when every slot is held by another
// holder or no quorum of nodes agreed on any, and with the error of an
// attempt that retrying cannot fix (ErrClosed, ErrConfig, the context's
// error).
func (s *Semaphore) TryAcquire(ctx context.Context) (Permit, error) {
	var one [1]Permit
	if s.err != nil {
		return one[0], s.err
	}
	_, err := s.tryAcquireAll(ctx, one[:], nil)
	return one[0], err
}

// Acquire waits for a permit: it makes attempts, as TryAcquire does, until
// one wins, MutexOptions.MaxTries attempts have failed, or ctx ends.
// Between two attempts it waits as a Lock does (Options.RetryDelayMin):
// for a release of one of the slots when every slot was found held by a
// quorum of nodes, at most eight retry delays and at most until a quorum
// stops refusing; the retry delay otherwise. Within one process, one
// Acquire of a Semaphore waits at a time, the others wait for it locally.
// A failure matches ErrNotAcquired, the context's error when ctx ended, or
// ErrClosed when the Client was closed (Close ends the wait at once).
func (s *Semaphore) Acquire(ctx context.Context) (Permit, error) {
	var one [1]Permit
	if s.err != nil {
		return one[0], s.err
	}
	err := s.acquireAll(ctx, one[:])
	return one[0], err
}

// TryAcquireMany makes one attempt for each of n permits, as TryAcquire
// does, and returns all n or none: when an attempt fails, the permits the
// earlier ones won are released (a release that fails leaves its slot to
// expire at its TTL) and the attempt's error is returned. It costs a round
// per permit. n must be from 1 to the limit (ErrInvalidOptions).
func (s *Semaphore) TryAcquireMany(ctx context.Context, n int) ([]Permit, error) {
	if err := s.checkMany(n); err != nil {
		return nil, err
	}
	permits := make([]Permit, n)
	if _, err := s.tryAcquireAll(ctx, permits, nil); err != nil {
		return nil, err
	}
	return permits, nil
}

// AcquireMany waits for n permits, all at once, as Acquire waits for one:
// its attempts are TryAcquireMany's. It listens for a release when its
// last attempt won nothing and found every slot held; after an attempt
// that won some permits and gave them back, it waits its retry delay, so
// that two AcquireMany that each won part of what they need fall out of
// step. n must be from 1 to the limit (ErrInvalidOptions).
func (s *Semaphore) AcquireMany(ctx context.Context, n int) ([]Permit, error) {
	if err := s.checkMany(n); err != nil {
		return nil, err
	}
	permits := make([]Permit, n)
	if err := s.acquireAll(ctx, permits); err != nil {
		return nil, err
	}
	return permits, nil
}

// checkMany checks the number of permits asked of TryAcquireMany and
// AcquireMany.
func (s *Semaphore) checkMany(n int) error {
	switch {
	case s.err != nil:
		return s.err
	case n < 1 || n > len(s.slots):
		return invalidOption("n", n, "is not in [1, "+strconv.Itoa(len(s.slots))+"], the semaphore's limit")
	}
	return nil
}

// tryAcquireAll makes one attempt for each element of permits and fills
// them all, or none, releasing what it won when an attempt fails. It also
// reports, when it failed, whether its first attempt found every slot held
// (see tryAcquire): only then will a release be announced that it has not
// made itself. Given kept, it keeps a failure there as tryAcquire does.
func (s *Semaphore) tryAcquireAll(ctx context.Context, permits []Permit, kept *keptFailure) (full bool, err error) {
	for i := range permits {
		permits[i], full, err = s.tryAcquire(ctx, kept)
		if err != nil {
			for _, won := range permits[:i] {
				// The attempt's error is the one to report: a slot whose
				// release failed expires at its TTL.
				_ = won.Release(context.WithoutCancel(ctx))
			}
			clear(permits)
			return full && i == 0, err
		}
	}
	return false, nil
}

// acquireAll is Acquire for every element of permits, all or none (see
// tryAcquireAll). It waits as waiting.Waiter.Retry says.
func (s *Semaphore) acquireAll(ctx context.Context, permits []Permit) error {
	w := s.waiter
	unheardBefore := w.client.notifier.Unheard()
	a := s.waits.Get().(*acquireAttempts)
	defer s.waits.Put(a)
	full, err := s.tryAcquireAll(ctx, permits, &a.kept)
	if err == nil || !errors.Is(err, ErrNotAcquired) {
		return err
	}
	if err := w.takeTurn(ctx); err != nil {
		return err
	}
	defer w.giveTurn()
	wait := w.lendWait()
	wait.AttemptBegan(unheardBefore)
	if cap(a.permits) < len(permits) {
		a.permits = make([]Permit, len(permits))
	}
	a.permits = a.permits[:len(permits)]
	err = wait.Retry(ctx, w.retryRule(), a, 2, acquireFailure(full, err))
	w.giveBackWait(wait)
	copy(permits, a.permits)
	clear(a.permits)
	return err
}

// acquireAttempts is what an Acquire that waits keeps between its
// attempts (waiting.Attempts). The permits are its own, so that the
// caller's do not escape; Semaphore.waits pools it.
type acquireAttempts struct {
	semaphore *Semaphore
	kept      keptFailure
	permits   []Permit
}

// acquireFailure is how an attempt failed with err that found every slot
// held, or not (full): then competitors won, or a release reached too few
// nodes.
func acquireFailure(full bool, err error) waiting.Failure {
	return waiting.Failure{Held: full, Split: !full, Backoff: !full, Err: err}
}

// Attempt makes one attempt of an Acquire and says how it ended.
func (a *acquireAttempts) Attempt(ctx context.Context, _ int) (waiting.Outcome, waiting.Failure) {
	full, err := a.semaphore.tryAcquireAll(ctx, a.permits, &a.kept)
	switch {
	case err == nil:
		return waiting.Won, waiting.Failure{}
	case !errors.Is(err, ErrNotAcquired):
		return waiting.Aborted, waiting.Failure{Err: err}
	}
	return waiting.Failed, acquireFailure(full, err)
}

// BeforeWait does nothing: an Acquire has no line.
func (a *acquireAttempts) BeforeWait(context.Context, waiting.Failure) error { return nil }

// Stop returns the error of an Acquire that stops after a failed attempt.
func (a *acquireAttempts) Stop(_ int, cause error, failure waiting.Failure) error {
	s := a.semaphore
	err := s.keptError(failure.Err, &a.kept)
	if cause != nil {
		return fmt.Errorf("redlock: semaphore %q: %w: %w", s.name, cause, err)
	}
	return err
}

// Permit is a held permit of a Semaphore: the hold of one of its slots.
// It is a small value; its methods speak of this hold only, so that a
// permit released and its slot won again by another goroutine is not
// confused with the new hold: they then answer as for a hold that ended.
type Permit struct {
	mutex      *Mutex
	slot       int
	generation uint64
}

// Slot returns the number of the permit's slot, from 0 to the limit less
// one.
func (p Permit) Slot() int { return p.slot }

// Key returns the key of the permit's slot on the nodes.
func (p Permit) Key() string {
	if p.mutex == nil {
		return ""
	}
	return p.mutex.key
}

// Release gives the permit back: the slot's key is released on every
// node, as Mutex.Unlock does, with its errors. It returns ErrNotHeld for a
// permit that was released already, or never acquired.
func (p Permit) Release(ctx context.Context) error {
	if p.mutex == nil {
		return ErrNotHeld
	}
	return p.mutex.release(ctx, p.generation)
}

// Extend extends the permit as Mutex.Extend does. It returns ErrNotHeld for
// a permit that was released.
func (p Permit) Extend(ctx context.Context) error {
	if p.mutex == nil {
		return ErrNotHeld
	}
	return p.mutex.extend(ctx, p.generation, 0)
}

// Until returns the end of the permit's validity, as Mutex.Until does, or
// the zero time once it was released.
func (p Permit) Until() time.Time {
	if p.mutex == nil {
		return time.Time{}
	}
	return p.mutex.hold.UntilOf(p.generation)
}

// Token returns the permit's token, the value of its slot's key, or ""
// once it was released.
func (p Permit) Token() string {
	if p.mutex == nil {
		return ""
	}
	return p.mutex.tokenOf(p.generation)
}

// Fence returns the permit's fencing token, with MutexOptions.Fencing: it
// strictly increases from hold to hold of the permit's slot (not across
// slots: each slot is a resource of its own). It is 0 once the permit was
// released.
func (p Permit) Fence() int64 {
	if p.mutex == nil {
		return 0
	}
	return p.mutex.hold.FenceOf(p.generation)
}

// Done returns a channel that is closed when the permit's hold ends, as
// Mutex.Done says; it is closed for a permit that was released.
func (p Permit) Done() <-chan struct{} {
	if p.mutex == nil {
		return closedChannel
	}
	return p.mutex.hold.DoneOf(p.generation)
}
