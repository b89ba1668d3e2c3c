package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/lockmux/lockmux/mux"
)

// observationPolls is how many times per TTL an observation reads the
// election again when too few nodes can report a change of its keys
// (RESP2 nodes, an ACL without client|tracking, connections being made).
const observationPolls = 10

// Observe returns a channel that delivers the election's leader, as a
// quorum of nodes shows it, then each new leader, in the order of their
// terms, once their terms are committed, until ctx ends or the Client is
// closed; then it is closed. Observe reads the nodes again whenever a node
// reports a change of the election's keys (RESP3 key tracking reports
// releases, expiries and acquisitions): a leadership is skipped only if it
// ended before the read that its start caused. Only while too few nodes can
// report changes does it read on a schedule, ten times per TTL. A reader
// that falls behind holds the next delivery back.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	leaders := make(chan Leader)
	c := e.client
	o := &observation{election: e, keys: []string{e.name, e.name + fenceKeySuffix}, wake: make(chan struct{}, 1)}
	w := &c.watcher
	w.armingMu.Lock()
	defer w.armingMu.Unlock()
	if w.ctx.Err() != nil || c.closed.Load() {
		close(leaders)
		return leaders
	}
	w.arming.Go(func() {
		defer close(leaders)
		o.run(ctx, leaders)
	})
	return leaders
}

// observation is one Observe under way. Its goroutine, which the Client's
// watcher owns, reads the election's keys on every node's subscription
// connection, which arms them for key tracking, and waits for a node to
// report a change.
type observation struct {
	election *Election
	keys     []string      // the lock key and its fencing counter
	wake     chan struct{} // a token when a node reported a change of a key, or reconnected
}

// wakeUp ends the observation's wait, now or at its next one.
func (o *observation) wakeUp() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// run delivers the leaders on leaders until ctx or the Client ends.
//
// A change that a quorum saw reaches the observation: every read arms the
// keys on the nodes that answered it, and a change made after a node's
// read is reported by it. When more than N - quorum nodes are armed, any
// quorum has an armed node among it. With fewer, run reads on a schedule.
func (o *observation) run(ctx context.Context, leaders chan<- Leader) {
	e := o.election
	c := e.client
	w := &c.watcher
	w.observe(o)
	defer w.forgetObservation(o)
	ttl := e.options.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	timer := time.NewTimer(ttl)
	defer timer.Stop()
	var last Leader
	for {
		select {
		case <-o.wake: // the read that follows answers it
		default:
		}
		views, armed := o.arm(ctx)
		if ctx.Err() != nil || w.ctx.Err() != nil {
			return
		}
		bound := time.Duration(-1)
		if leader, ok := leaderOf(views, c.need); ok {
			// A new token whose term is not above the last one's is a leader
			// whose fence is not committed yet: the commit wakes us.
			if leader.token != last.token && leader.Term > last.Term {
				select {
				case leaders <- leader:
				case <-ctx.Done():
					return
				case <-w.ctx.Done():
					return
				}
				last = leader
			}
			// Without reports of enough nodes, the leader's expiry is read
			// when it comes, or sooner on the schedule.
			bound = leader.TTL + c.options.NodeTimeout
		}
		if armed >= len(views)-c.need+1 {
			bound = -1 // the nodes report every change, expiries too
		} else if bound < 0 || bound > ttl/observationPolls {
			bound = ttl / observationPolls
		}
		var expired <-chan time.Time
		if bound >= 0 {
			timer.Reset(bound)
			expired = timer.C
		}
		select {
		case <-o.wake:
		case <-expired:
		case <-ctx.Done():
			return
		case <-w.ctx.Done():
			return
		}
		timer.Stop()
	}
}

// arm reads the election's keys on every node's subscription connection,
// which arms them for key tracking there, and returns what each node
// answered and how many were armed. The nodes that cannot be armed
// (without tracking, none) are read through their connections.
func (o *observation) arm(ctx context.Context) ([]nodeView, int) {
	e := o.election
	c := e.client
	w := &c.watcher
	if c.options.Protocol == ProtocolRESP2 {
		views, _ := e.read(ctx)
		return views, 0
	}
	w.client.notifier.StartTracking()
	subscriber := c.notifier.TrackingSubscriber()
	if subscriber == nil {
		views, _ := e.read(ctx)
		return views, 0
	}
	armCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(w.ctx, cancel)
	defer stop()
	views := make([]nodeView, c.group.Len())
	tag := w.newWriteTag()
	// A key has one arming per node. While a renewed hold of this Client
	// watches the lock key, its arming must stay in effect, so that it
	// tells its own writes from others': the observation arms the counter
	// alone, and is woken by the reports of the hold's arming.
	keys := o.keys
	withLockKey := !w.watches(e.name)
	if !withLockKey {
		keys = o.keys[1:]
	}
	var armed sync.WaitGroup
	for node := range views {
		armed.Go(func() {
			request := mux.NewRequest()
			request.SetEval(watchLua, len(o.keys), 0)
			for _, key := range o.keys {
				request.AppendString(key)
			}
			if subscriber.Track(armCtx, node, request, tag, keys...) == nil {
				views[node] = readView(request.Reply())
			}
		})
	}
	armed.Wait()
	if withLockKey && w.watches(e.name) {
		// A hold started meanwhile, and its arming may have been answered
		// before this one.
		w.armAgain(e.name)
	}
	count := 0
	for _, view := range views {
		if view.answered {
			count++
		}
	}
	if count < len(views) {
		// The nodes that could not be armed are read all the same.
		if read, err := e.read(ctx); err == nil {
			for node, view := range views {
				if !view.answered {
					views[node] = read[node]
				}
			}
		}
	}
	return views, count
}

// observe lists o, whose keys' changes wake it.
func (w *watcher) observe(o *observation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.observations == nil {
		w.observations = make(map[*observation]bool)
	}
	w.observations[o] = true
}

// forgetObservation unlists o.
func (w *watcher) forgetObservation(o *observation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.observations, o)
}

// watches reports whether a renewed hold of the Client watches key.
func (w *watcher) watches(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.holds[key] != nil
}

// armAgain arms once more the keys of the renewed hold that watches key,
// under the tag of its last own write, unless that write is under way:
// the hold arms them when it is over.
func (w *watcher) armAgain(key string) {
	w.mu.Lock()
	m := w.holds[key]
	w.mu.Unlock()
	if m == nil {
		return
	}
	h := &m.hold
	h.mu.Lock()
	generation, tag, armed := h.generation, h.watchTag, h.held && !h.lost && !h.writing
	h.mu.Unlock()
	if armed {
		m.startArming(generation, tag, allNodes)
	}
}

// wakeObservations wakes the observations of key, or all of them when
// key is "": a flush, or a subscription connection that ended or was
// replaced.
func (w *watcher) wakeObservations(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for o := range w.observations {
		if key == "" || o.keys[0] == key || o.keys[1] == key {
			o.wakeUp()
		}
	}
}
