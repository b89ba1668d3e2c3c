package redlock

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// holdEnds watches the ends of a Client's holds (see expiry.go) with one
// goroutine and one timer, whatever the number of holds: a runtime timer
// per hold made every timer of the process dearer to move. It keeps the
// Mutexes whose hold has an end to watch in a min-heap by the moment of
// that end. Its goroutine does nothing else, and signals each end that
// has come on a goroutine of its own: an observer that unlocks the hold
// it is told was lost (a round trip) delays no other end.
type holdEnds struct {
	client *Client

	mu    sync.Mutex
	queue endQueue // guarded by mu
	wake  chan struct{}
	next  time.Duration // guarded by mu: the wait for the first end, when set woke the goroutine
	// armed is the end the timer waits for, zero when none: guarded by
	// mu. A hold whose end comes later wakes nobody.
	armed   time.Time
	cancel  context.CancelFunc
	closed  bool
	running sync.WaitGroup // the goroutine, and the ends it signals

	due []*Mutex // the goroutine's
}

// endQueue is a min-heap of Mutexes by the end of their hold
// (hold.endAt); each Mutex's hold.endPlace is one more than its index.
type endQueue []*Mutex

func (q endQueue) Len() int           { return len(q) }
func (q endQueue) Less(i, j int) bool { return q[i].hold.endAt.Before(q[j].hold.endAt) }
func (q endQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].hold.endPlace, q[j].hold.endPlace = i+1, j+1
}
func (q *endQueue) Push(x any) {
	m := x.(*Mutex)
	m.hold.endPlace = len(*q) + 1
	*q = append(*q, m)
}
func (q *endQueue) Pop() any {
	old := *q
	m := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	m.hold.endPlace = 0
	return m
}

// set watches the end of m's hold at the given moment, by the Client's
// clock, in place of the one watched. The caller holds m.hold.mu. After
// close it watches nothing: Client.Close ended the holds.
func (e *holdEnds) set(m *Mutex, at time.Time) {
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
	m.hold.endAt = at
	if place := m.hold.endPlace; place != 0 {
		heap.Fix(&e.queue, place-1)
	} else {
		heap.Push(&e.queue, m)
	}
	if e.queue[0] == m && (e.armed.IsZero() || at.Before(e.armed)) {
		// The clock is read here, as a timer of the hold's own would
		// be set, never by the goroutine at each change of the queue.
		e.next, e.armed = e.client.timerDelay(at), at
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

// remove stops watching the end of m's hold. The caller holds m.hold.mu.
func (e *holdEnds) remove(m *Mutex) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if place := m.hold.endPlace; place != 0 {
		heap.Remove(&e.queue, place-1)
	}
}

// run looks at each hold whose end has come by the Client's clock, until
// ctx ends. The timer waits for the first end in real time (see
// Client.timerDelay).
func (e *holdEnds) run(ctx context.Context) {
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
func (e *holdEnds) serve() time.Duration {
	clock := e.client.options.clock
	for {
		e.mu.Lock()
		now := clock.Now()
		e.due = e.due[:0]
		for len(e.queue) > 0 && !e.queue[0].hold.endAt.After(now) {
			e.due = append(e.due, heap.Pop(&e.queue).(*Mutex))
		}
		wait := time.Hour
		e.armed = time.Time{}
		if len(e.queue) > 0 {
			e.armed = e.queue[0].hold.endAt
			wait = e.client.timerDelay(e.armed)
		}
		e.mu.Unlock()
		if len(e.due) == 0 {
			return wait
		}
		for i, m := range e.due {
			e.due[i] = nil
			if generation, ended := m.endHasCome(); ended {
				e.running.Go(func() { m.signalEnd(generation) })
			}
		}
	}
}

// close stops watching ends, and waits for the goroutine and the ends it
// is signalling. Client.Close ended the holds first.
func (e *holdEnds) close() {
	e.mu.Lock()
	e.closed = true
	cancel := e.cancel
	for _, m := range e.queue {
		m.hold.endPlace = 0
	}
	e.queue = nil
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	e.running.Wait()
}
