package redlock

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// renewal is one automatic extension in the renewer's schedule. It
// belongs to one hold of a Mutex, identified by the hold's generation: a
// renewal of a hold that ended is dropped when it comes due.
type renewal struct {
	mutex      *Mutex
	generation uint64
	due        time.Time // by the Client's clock
}

// renewalQueue is a min-heap of renewals by due time.
type renewalQueue []renewal

func (q renewalQueue) Len() int           { return len(q) }
func (q renewalQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q renewalQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *renewalQueue) Push(x any)        { *q = append(*q, x.(renewal)) }
func (q *renewalQueue) Pop() any {
	old := *q
	last := old[len(old)-1]
	*q = old[:len(old)-1]
	return last
}

// renewer extends the AutoExtend holds of a Client. One goroutine and one
// timer serve every hold; the extensions that come due together are sent
// together, so that their commands share the writes to each node. The
// renewer never ends a hold that runs out of time: each hold's end has a
// timer of its own (see expiry.go), which fires whatever the renewer is
// doing.
type renewer struct {
	client *Client

	mu         sync.Mutex
	queue      renewalQueue
	wake       chan struct{}
	cancel     context.CancelFunc
	goroutines sync.WaitGroup
}

// schedule adds an event, starting the renewer's goroutine on first use.
// After Close it schedules nothing and ends the event's hold at once: no
// renewal would come for it any more.
func (r *renewer) schedule(event renewal) {
	if !r.add(event) {
		// Outside r.mu: the loss reaches the observer and Do's context.
		event.mutex.signalLost(event.generation, errClientClosed)
	}
}

// add queues an event and reports whether it did: not after Close.
func (r *renewer) add(event renewal) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client.closed.Load() {
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
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// run serves the schedule until ctx ends. Due times are readings of the
// Client's clock; the timer waits for the first of them in real time (see
// Client.timerDelay).
func (r *renewer) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	clock := r.client.options.Clock
	var due []renewal
	for {
		r.mu.Lock()
		now := clock.Now()
		due = due[:0]
		for len(r.queue) > 0 && !r.queue[0].due.After(now) {
			due = append(due, heap.Pop(&r.queue).(renewal))
		}
		wait := time.Hour
		if len(r.queue) > 0 {
			wait = r.client.timerDelay(r.queue[0].due)
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

// serve sends every extension that came due at once, then gathers their
// replies.
func (r *renewer) serve(due []renewal) {
	sent := due[:0]
	for _, event := range due {
		if event.mutex.startRenewal(event.generation) {
			sent = append(sent, event)
		}
	}
	for _, event := range sent {
		event.mutex.finishRenewal(event.generation)
	}
}

// close stops the renewer's goroutine and waits for it. The holds it was
// renewing are ended by Client.Close (see holdRegistry).
func (r *renewer) close() {
	r.mu.Lock()
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	r.goroutines.Wait()
}
