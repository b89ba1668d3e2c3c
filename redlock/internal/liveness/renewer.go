package liveness

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Renewal is one automatic extension in a Renewer's schedule. It belongs
// to one hold of a lock, by the hold's generation: a renewal of a hold
// that ended is dropped when it comes due.
type Renewal[L Lock] struct {
	Lock       L
	Generation uint64
	Due        time.Time // by the Renewer's clock
	// Early is how much sooner than Due it may be sent, with a batch that
	// comes due first (see RenewalEarly); none for a retry or RenewNow.
	Early time.Duration
	// seq is the renewal's place among those scheduled for the lock.
	seq uint64
}

// Stale reports whether a later renewal of the lock replaced this one.
func (r Renewal[L]) Stale() bool { return r.seq != r.Lock.Hold().renewals.Load() }

// renewalQueue is a min-heap of renewals by due time.
type renewalQueue[L Lock] []Renewal[L]

func (q renewalQueue[L]) Len() int           { return len(q) }
func (q renewalQueue[L]) Less(i, j int) bool { return q[i].Due.Before(q[j].Due) }
func (q renewalQueue[L]) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *renewalQueue[L]) Push(x any)        { *q = append(*q, x.(Renewal[L])) }
func (q *renewalQueue[L]) Pop() any {
	old := *q
	last := old[len(old)-1]
	*q = old[:len(old)-1]
	return last
}

// MaxRenewalBatch bounds the renewals served at once: the rounds a
// Renewer's serve keeps are as many, whatever the number of holds.
const MaxRenewalBatch = 512

// RenewalEarly is how much sooner than scheduled a renewal of a hold with
// the given TTL may go, with the batch of one that comes due before it:
// a tenth of the renewals' interval. It lets holds share batches.
func RenewalEarly(ttl time.Duration) time.Duration { return ttl / 30 }

// Renewer schedules the automatic extensions of holds. One goroutine and
// one timer serve every hold; the renewals that come due together, up to
// MaxRenewalBatch, go to serve together. It never ends a hold that runs
// out of time: Ends does, whatever the Renewer is doing.
type Renewer[L Lock] struct {
	clock  Clock
	closed *atomic.Bool // set when the client closes
	serve  func(due []Renewal[L])

	mu         sync.Mutex
	queue      renewalQueue[L]
	wake       chan struct{}
	cancel     context.CancelFunc
	goroutines sync.WaitGroup
}

// Init sets the clock of the due times, the client's closed flag, and
// serve, which sends the renewals that came due on the goroutine.
func (r *Renewer[L]) Init(clock Clock, closed *atomic.Bool, serve func(due []Renewal[L])) {
	r.clock, r.closed, r.serve = clock, closed, serve
}

// Schedule adds event, starting the goroutine on first use. It reports
// false after the client closed: no renewal would come, and the caller
// ends the hold at once.
func (r *Renewer[L]) Schedule(event Renewal[L]) bool {
	event.seq = event.Lock.Hold().renewals.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return false
	}
	if r.wake == nil {
		r.wake = make(chan struct{}, 1)
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		r.goroutines.Go(func() { r.run(ctx) })
	}
	heap.Push(&r.queue, event)
	if r.queue[0] == event {
		r.Wake()
	}
	return true
}

// Wake makes the goroutine look at the schedule again.
func (r *Renewer[L]) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// RenewNow schedules the renewal of l's hold of the given generation for
// now, in place of the one scheduled.
func (r *Renewer[L]) RenewNow(l L, generation uint64) bool {
	return r.Schedule(Renewal[L]{Lock: l, Generation: generation, Due: r.clock.Now()})
}

// run serves the schedule until ctx ends. The timer waits for the first
// due time in real time.
func (r *Renewer[L]) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var due []Renewal[L]
	for {
		r.mu.Lock()
		now := r.clock.Now()
		due = due[:0]
		for len(r.queue) > 0 && len(due) < MaxRenewalBatch && !r.queue[0].Due.Add(-r.queue[0].Early).After(now) {
			due = append(due, heap.Pop(&r.queue).(Renewal[L]))
		}
		wait := time.Hour
		if len(r.queue) > 0 {
			wait = r.queue[0].Due.Sub(r.clock.Now())
		}
		r.mu.Unlock()
		if len(due) > 0 {
			r.serve(due)
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-r.wake:
			timer.Stop()
		}
	}
}

// Queued returns a copy of the renewals scheduled.
func (r *Renewer[L]) Queued() []Renewal[L] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Renewal[L](nil), r.queue...)
}

// Close stops the goroutine and waits for it. The holds it renewed are
// ended by the client's close.
func (r *Renewer[L]) Close() {
	r.mu.Lock()
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	r.goroutines.Wait()
}
