package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/lockmux/lockmux/mux"
)

// observationPolls is how many times per TTL an observation reads the
// election when too few nodes can report changes.
const observationPolls = 10

// Observe returns a channel that delivers the election's leader, then each
// new one in the order of their terms. It is closed when ctx ends or the
// Client is closed. It reads the nodes when they report a change,
// or ten times per TTL without reports (docs/election.md). A slow reader
// holds the next delivery back.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	leaders := make(chan Leader)
	c := e.client
	o := &observation{election: e, keys: []string{e.name, e.name + fenceKeySuffix}, wake: make(chan struct{}, 1)}
	w := &c.watcher
	if c.closed.Load() || !w.Go(func() {
		defer close(leaders)
		o.run(ctx, leaders)
	}) {
		close(leaders)
	}
	return leaders
}

// observation is one Observe under way. Its goroutine, owned by the
// Client's watcher, reads and arms the keys, then waits for a change.
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

// run delivers the leaders on leaders until ctx or the Client ends. With
// more than N − quorum nodes armed, any quorum's change is reported; with
// fewer, run reads on a schedule.
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
		if ctx.Err() != nil || w.Context().Err() != nil {
			return
		}
		bound := time.Duration(-1)
		if leader, ok := leaderOf(views, c.need); ok {
			// A term not above the last is not committed yet.
			if leader.token != last.token && leader.Term > last.Term {
				select {
				case leaders <- leader:
				case <-ctx.Done():
					return
				case <-w.Context().Done():
					return
				}
				last = leader
			}
			// Without enough reports, read at expiry or on schedule.
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
		case <-w.Context().Done():
			return
		}
		timer.Stop()
	}
}

// arm reads the election's keys on the subscription connections, which
// arms them, and returns each node's answer and the count armed. Nodes
// without tracking are read through their connections.
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
	stop := context.AfterFunc(w.Context(), cancel)
	defer stop()
	views := make([]nodeView, c.group.Len())
	tag := w.NewWriteTag()
	// A key has one arming per node. While a renewed hold watches the lock
	// key, arm the counter alone and ride on the hold's arming.
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
		// A hold started meanwhile and may have armed before this.
		w.armAgain(e.name)
	}
	count := 0
	for _, view := range views {
		if view.answered {
			count++
		}
	}
	if count < len(views) {
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
	_, ok := w.HolderOf(key)
	return ok
}

// armAgain re-arms the keys of the renewed hold that watches key, under
// its last write's tag, unless that write is under way.
func (w *watcher) armAgain(key string) {
	m, ok := w.HolderOf(key)
	if !ok {
		return
	}
	h := &m.hold
	h.Mu.Lock()
	generation, tag, armed := h.Generation, h.WatchTag, h.Held && !h.Lost && !h.Writing
	h.Mu.Unlock()
	if armed {
		w.StartArming(m, generation, tag, allNodes, nil)
	}
}

// wakeObservations wakes the observations of key, or all of them for "".
func (w *watcher) wakeObservations(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for o := range w.observations {
		if key == "" || o.keys[0] == key || o.keys[1] == key {
			o.wakeUp()
		}
	}
}
