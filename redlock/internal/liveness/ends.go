package liveness

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Ends watches the ends of holds with one goroutine and one timer,
// whatever their number: a runtime timer per hold made every timer of the
// process dearer to move. It keeps the locks whose hold has an end in a
// min-heap by the moment of that end. Its goroutine does nothing else,
// and signals each end on a goroutine of its own (Lock.EndCame).
type Ends[L Lock] struct {
	clock Clock

	mu    sync.Mutex
	queue endQueue[L]   // guarded by mu
	wake  chan struct{} // made on first use
	next  time.Duration // guarded by mu: the wait for the first end
	// armed is the end the timer waits for, zero when none: guarded by
	// mu. A hold whose end comes later wakes nobody.
	armed   time.Time
	cancel  context.CancelFunc
	closed  bool
	running sync.WaitGroup // the goroutine, and the ends it signals

	due []L // the goroutine's
}

// endQueue is a min-heap of locks by the end of their hold; each hold's
// endPlace is one more than its index.
type endQueue[L Lock] []L

func (q endQueue[L]) Len() int           { return len(q) }
func (q endQueue[L]) Less(i, j int) bool { return q[i].Hold().endAt.Before(q[j].Hold().endAt) }
func (q endQueue[L]) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].Hold().endPlace, q[j].Hold().endPlace = i+1, j+1
}
func (q *endQueue[L]) Push(x any) {
	l := x.(L)
	l.Hold().endPlace = len(*q) + 1
	*q = append(*q, l)
}
func (q *endQueue[L]) Pop() any {
	old := *q
	l := old[len(old)-1]
	var zero L
	old[len(old)-1] = zero
	*q = old[:len(old)-1]
	l.Hold().endPlace = 0
	return l
}

// Init sets the clock by which the ends come.
func (e *Ends[L]) Init(clock Clock) { e.clock = clock }

// SetLocked watches the end of l's current hold (EndLocked) in place of
// the one watched. The caller holds the hold's Mu. After Close it
// watches nothing.
func (e *Ends[L]) SetLocked(l L) {
	at := EndLocked(l)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	if e.wake == nil {
		e.wake = make(chan struct{}, 1)
		ctx, cancel := context.WithCancel(context.Background())
		e.cancel = cancel
		e.running.Go(func() { e.run(ctx) })
	}
	h := l.Hold()
	h.endAt = at
	if place := h.endPlace; place != 0 {
		heap.Fix(&e.queue, place-1)
	} else {
		heap.Push(&e.queue, l)
	}
	if e.queue[0] == l && (e.armed.IsZero() || at.Before(e.armed)) {
		// The clock is read here, as a timer of the hold's own would
		// be set, never by the goroutine at each change of the queue.
		e.next, e.armed = at.Sub(e.clock.Now()), at
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

// RemoveLocked stops watching the end of l's hold. The caller holds the
// hold's Mu.
func (e *Ends[L]) RemoveLocked(l L) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if place := l.Hold().endPlace; place != 0 {
		heap.Remove(&e.queue, place-1)
	}
}

// run looks at each hold whose end has come by the clock, until ctx
// ends. The timer waits for the first end in real time.
func (e *Ends[L]) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
			e.mu.Lock()
			next := e.next
			e.mu.Unlock()
			timer.Reset(next)
			continue
		case <-timer.C:
		}
		timer.Reset(e.serve())
	}
}

// serve looks at the holds whose end has come, and returns the wait for
// the next end.
func (e *Ends[L]) serve() time.Duration {
	for {
		e.mu.Lock()
		now := e.clock.Now()
		e.due = e.due[:0]
		for len(e.queue) > 0 && !e.queue[0].Hold().endAt.After(now) {
			e.due = append(e.due, heap.Pop(&e.queue).(L))
		}
		wait := time.Hour
		e.armed = time.Time{}
		if len(e.queue) > 0 {
			e.armed = e.queue[0].Hold().endAt
			wait = e.armed.Sub(e.clock.Now())
		}
		e.mu.Unlock()
		if len(e.due) == 0 {
			return wait
		}
		var zero L
		for i, l := range e.due {
			e.due[i] = zero
			if generation, ended := e.endHasCome(l); ended {
				e.running.Go(func() { l.EndCame(generation) })
			}
		}
	}
}

// endHasCome reports, with the hold's generation, whether the hold of l
// ends now; otherwise an extension moved its end, or the clock is slower
// than the timer, and the end is watched again.
func (e *Ends[L]) endHasCome(l L) (generation uint64, ended bool) {
	h := l.Hold()
	h.Mu.Lock()
	defer h.Mu.Unlock()
	if !h.Held || h.Lost {
		return 0, false
	}
	if EndLocked(l).Sub(e.clock.Now()) > 0 {
		e.SetLocked(l)
		return 0, false
	}
	return h.Generation, true
}

// Close stops watching ends, and waits for the goroutine and the ends it
// is signalling. The holds were ended first.
func (e *Ends[L]) Close() {
	e.mu.Lock()
	e.closed = true
	cancel := e.cancel
	for _, l := range e.queue {
		l.Hold().endPlace = 0
	}
	e.queue = nil
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	e.running.Wait()
}
