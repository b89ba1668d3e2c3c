package redlock

import (
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"
)

// renewalKind says what a scheduled event does.
type renewalKind uint8

const (
	// renewalExtend extends an AutoExtend hold.
	renewalExtend renewalKind = iota
	// renewalExpire ends a hold whose validity passed: it closes Done.
	renewalExpire
)

// renewal is one event of the renewer's schedule. It belongs to one hold
// of a Mutex, identified by the hold's generation: an event of a hold that
// ended is dropped when it comes due.
type renewal struct {
	mutex      *Mutex
	generation uint64
	kind       renewalKind
	due        time.Time
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

// renewer extends the AutoExtend holds of a Client and signals the end of
// holds whose validity passes. One goroutine and one timer serve every
// hold; the extensions that come due together are sent together, so that
// their commands share the writes to each node.
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
// renewal or expiry would come for it any more.
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

// run serves the schedule until ctx ends.
func (r *renewer) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var due []renewal
	for {
		r.mu.Lock()
		now := time.Now()
		due = due[:0]
		for len(r.queue) > 0 && !r.queue[0].due.After(now) {
			due = append(due, heap.Pop(&r.queue).(renewal))
		}
		wait := time.Hour
		if len(r.queue) > 0 {
			wait = r.queue[0].due.Sub(now)
		}
		r.mu.Unlock()
		if len(due) > 0 {
			r.serve(ctx, due)
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

// serve runs the events that came due: expiries first, then every
// extension sent at once and the replies gathered.
func (r *renewer) serve(ctx context.Context, due []renewal) {
	sent := due[:0]
	for _, event := range due {
		m := event.mutex
		switch event.kind {
		case renewalExpire:
			m.expireIfDue(event.generation)
		case renewalExtend:
			if m.startRenewal(ctx, event.generation) {
				sent = append(sent, event)
			}
		}
	}
	for _, event := range sent {
		event.mutex.finishRenewal(event.generation)
	}
}

// close stops the renewer's goroutine, waits for it, and ends every hold
// it was keeping track of: their keys stay on the nodes until their TTL
// ends, but nothing renews them or signals their end any more.
func (r *renewer) close() {
	r.mu.Lock()
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	r.goroutines.Wait()
	r.mu.Lock()
	pending := slices.Clone(r.queue)
	r.mu.Unlock()
	for _, event := range pending {
		event.mutex.signalLost(event.generation, errClientClosed)
	}
}
