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
	// early is how much sooner than due it may be sent, with a batch
	// that comes due first: a tenth of the interval of a scheduled
	// renewal (see renewalEarly), none for a retry or renewNow.
	early time.Duration
	// seq is the renewal's place among the renewals scheduled for the
	// Mutex: only the latest counts (see renewNow).
	seq uint64
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

// maxRenewalBatch bounds the extensions the renewer sends at once: the
// rounds it keeps are as many, whatever the number of holds.
const maxRenewalBatch = 512

// renewalEarly is how much sooner than scheduled a renewal of a hold with
// the given TTL may go, with the batch of a renewal that comes due before
// it: a tenth of the renewals' interval. Holds taken one after the other
// come due one after the other; a renewal sent a little early lets them
// share batches, and costs the hold nothing.
func renewalEarly(ttl time.Duration) time.Duration { return ttl / 30 }

// renewer extends the AutoExtend holds of a Client. One goroutine and one
// timer serve every hold; the extensions that come due together, up to
// maxRenewalBatch, are sent together, each hold's on a round of the
// renewer's, and their commands are written to each node at once. The
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

	// extenders are the rounds of a batch, made as the batches grow and
	// reused, and arming the armings of the batch's watched holds (see
	// armBatch): they belong to the renewer's goroutine.
	extenders []*extender
	arming    *armingBatch
}

// schedule adds an event, starting the renewer's goroutine on first use.
// After Close it schedules nothing and ends the event's hold at once: no
// renewal would come for it any more.
func (r *renewer) schedule(event renewal) {
	event.seq = event.mutex.renewals.Add(1)
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
	clock := r.client.options.clock
	var due []renewal
	for {
		r.mu.Lock()
		now := clock.Now()
		due = due[:0]
		for len(r.queue) > 0 && len(due) < maxRenewalBatch && !r.queue[0].due.Add(-r.queue[0].early).After(now) {
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

// serve sends the extensions that came due at once, each on a round of
// its own, writes them to each node together, then gathers their replies.
func (r *renewer) serve(due []renewal) {
	sent := due[:0]
	for _, event := range due {
		m := event.mutex
		if event.seq != m.renewals.Load() {
			continue // a later renewal replaced it (renewNow)
		}
		x := r.extender(len(sent))
		// An extension that cannot be sent means the hold ended
		// (ErrNotHeld), expired, reached MaxHold or its Client closed:
		// nothing more to renew. The timer of the hold's end ends it, a
		// loss margin before its validity, or Client.Close did.
		if e, err := m.sendExtension(x, event.generation, 0); err == nil {
			x.inFlight = e
			sent = append(sent, event)
		}
	}
	if len(sent) == 0 {
		return
	}
	r.client.group.Flush()
	for i, event := range sent {
		event.mutex.finishRenewal(event, r.extenders[i])
	}
	r.startArmingBatch()
}

// extender returns the i-th extender of a batch, made on first use.
func (r *renewer) extender(i int) *extender {
	if i == len(r.extenders) {
		r.extenders = append(r.extenders, &extender{batched: true})
	}
	return r.extenders[i]
}

// renewNow schedules the renewal of m's hold of the given generation for
// now, in place of the one scheduled: its watcher saw a key change (see
// watcher). The renewal schedules the next one as usual.
func (r *renewer) renewNow(m *Mutex, generation uint64) {
	r.schedule(renewal{mutex: m, generation: generation, due: r.client.options.clock.Now()})
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

// finishRenewal gathers the replies of an automatic extension and
// schedules the next one (see nextRenewal), sooner after a failure, at the
// retry delay, as long as an attempt can still finish before the hold's end
// is signalled. When none can, the hold is lost now, before its timer
// fires, so that its holder stops as early as possible.
func (m *Mutex) finishRenewal(event renewal, x *extender) {
	generation, e := event.generation, x.inFlight
	m.gather(context.Background(), x.round)
	err := m.applyExtension(e, x.round, true)
	c := m.client
	now := c.options.clock.Now()
	h := &m.hold
	h.mu.Lock()
	current, until, ttl := h.currentLocked(generation) && !h.lost, h.until, h.ttl
	h.mu.Unlock()
	if !current {
		return
	}
	var due time.Time
	var early time.Duration
	switch {
	case err == nil && e.ttl < ttl:
		// MaxHold cut this extension short: it was the last one, and the
		// timer of the hold's end ends it.
		return
	case err == nil:
		due, early = m.nextRenewal(now, until, ttl), renewalEarly(ttl)
	default:
		latest := m.latestRenewal(until)
		if latest.Before(now) {
			m.signalLost(generation, err)
			return
		}
		due = now.Add(m.retryDelay(1))
		if latest.Before(due) {
			due = latest
		}
	}
	c.renewer.schedule(renewal{mutex: m, generation: generation, due: due, early: early})
}

// nextRenewal returns when the next automatic extension of a hold valid
// until the given moment is due, by the Client's clock: a third of the TTL
// after now, or sooner when the validity left is short (a resumed hold),
// so that an extension that takes a whole node timeout still finishes
// before the hold's end is signalled. It may be now.
func (m *Mutex) nextRenewal(now, until time.Time, ttl time.Duration) time.Time {
	due := now.Add(ttl / 3)
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
