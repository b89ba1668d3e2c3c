package redlock

import (
	"errors"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/resp"
)

// The renewer's extensions of watched holds are armed again a batch at a
// time: one goroutine per batch, and on each node the reads of the whole
// batch written together (mux.Subscriber.TrackAll), instead of a goroutine
// and a round trip per hold and node. What each hold's arming checks, and
// what it does when a key is not whole, is Mutex.arm's.

// armingBatch is the armings of one batch of renewals. It belongs to the
// renewer's goroutine while it fills, then to the goroutine that arms it,
// which gives it back to the watcher's spares; its buffers are reused.
type armingBatch struct {
	holds    []batchedArming
	requests []*mux.Request // one per hold, reused from node to node
	armings  []mux.Arming   // the reads of one node
	index    []int          // the hold of each of armings
}

// batchedArming is one hold to arm: its extension succeeded under tag.
type batchedArming struct {
	mutex      *Mutex
	generation uint64
	tag        uint64
	token      []byte // the hold's value, read before each node's reads
	done       bool   // no more nodes to arm: stale, or renewing now
}

// armLater adds the arming of m's hold of the given generation, under
// tag, to the batch being filled. It runs on the renewer's goroutine.
func (r *renewer) armLater(m *Mutex, generation, tag uint64) {
	if r.arming == nil {
		r.arming = r.client.watcher.spareBatch()
	}
	holds := r.arming.holds
	if len(holds) == cap(holds) {
		holds = append(holds, batchedArming{})
	} else {
		holds = holds[:len(holds)+1] // keeps the token's buffer
	}
	hold := &holds[len(holds)-1]
	hold.mutex, hold.generation, hold.tag, hold.done = m, generation, tag, false
	r.arming.holds = holds
}

// startArmingBatch arms the batch filled so far, if any, on a goroutine
// of its own.
func (r *renewer) startArmingBatch() {
	batch := r.arming
	if batch == nil {
		return
	}
	r.arming = nil
	w := &r.client.watcher
	w.armingMu.Lock()
	defer w.armingMu.Unlock()
	if w.ctx.Err() != nil {
		w.giveBack(batch)
		return
	}
	w.arming.Go(func() {
		w.armBatch(batch)
		w.giveBack(batch)
	})
}

// spareBatch returns an empty armingBatch, reused when one is spare.
func (w *watcher) spareBatch() *armingBatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.spares); n > 0 {
		batch := w.spares[n-1]
		w.spares = w.spares[:n-1]
		return batch
	}
	return &armingBatch{}
}

// giveBack keeps batch, armed, for a later one.
func (w *watcher) giveBack(batch *armingBatch) {
	for i := range batch.holds {
		batch.holds[i].mutex = nil
	}
	batch.holds = batch.holds[:0]
	w.mu.Lock()
	w.spares = append(w.spares, batch)
	w.mu.Unlock()
}

// armBatch arms the keys of each hold of the batch on each node the hold
// has, as Mutex.arm does for one hold: node after node, the reads of every
// hold still current written together.
func (w *watcher) armBatch(batch *armingBatch) {
	c := w.client
	subscriber := c.notifier.TrackingSubscriber()
	if subscriber == nil {
		return
	}
	for len(batch.requests) < len(batch.holds) {
		batch.requests = append(batch.requests, mux.NewRequest())
	}
	for node := range c.addresses {
		batch.armings, batch.index = batch.armings[:0], batch.index[:0]
		for i := range batch.holds {
			hold := &batch.holds[i]
			if hold.done {
				continue
			}
			m := hold.mutex
			h := &m.hold
			h.Mu.Lock()
			current := h.CurrentLocked(hold.generation) && !h.Lost && h.WatchTag == hold.tag && !h.Writing
			had := current && h.Watching[node]
			hold.token = append(hold.token[:0], h.Token...)
			h.Mu.Unlock()
			if !current {
				hold.done = true
				continue
			}
			if !had {
				continue
			}
			request := batch.requests[i]
			request.SetEval(watchLua, len(m.keys), 0)
			for _, key := range m.keys {
				request.AppendString(key)
			}
			batch.armings = append(batch.armings, mux.Arming{Request: request, Tag: hold.tag, Keys: m.keys})
			batch.index = append(batch.index, i)
		}
		if len(batch.armings) == 0 {
			continue
		}
		subscriber.TrackAll(w.ctx, node, batch.armings)
		now := c.options.clock.Now()
		for j := range batch.armings {
			arming := &batch.armings[j]
			hold := &batch.holds[batch.index[j]]
			if err := arming.Err; err != nil {
				var refusal *resp.ServerError
				if errors.As(err, &refusal) && isConfigError(refusal.Message) {
					w.refused(node, err)
				}
				continue // not armed: the renewal's schedule watches this node
			}
			h := &hold.mutex.hold
			h.Mu.Lock()
			current := h.CurrentLocked(hold.generation) && !h.Lost && h.WatchTag == hold.tag
			left := h.Until.Sub(now)
			h.Mu.Unlock()
			if current && !whole(arming.Request.Reply(), hold.token, left) {
				hold.mutex.renewNow(hold.generation)
				hold.done = true
			}
		}
		for j := range batch.armings {
			batch.armings[j] = mux.Arming{}
		}
	}
}
