package liveness

import (
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
)

// ArmingBatch is the armings of one batch of renewals, armed together:
// one goroutine per batch, and on each node the reads of the whole batch
// written at once (mux.Subscriber.TrackAll). It belongs to the renewer's
// goroutine while it fills, then to the goroutine that arms it, which
// gives it back to the Watcher's spares; its buffers are reused.
type ArmingBatch[L WatchedLock] struct {
	only     int // the node to arm, or AllNodes
	holds    []batchedArming[L]
	requests []*mux.Request // one per hold, reused from node to node
	armings  []mux.Arming   // the reads of one node
	index    []int          // the hold of each of armings
}

// batchedArming is one hold to arm: its extension succeeded under tag.
type batchedArming[L WatchedLock] struct {
	lock       L
	generation uint64
	tag        uint64
	token      []byte // the hold's value, read before each node's reads
	unsure     []bool // the nodes to judge by their read (see Watcher.Arm)
	done       bool   // no more nodes to arm: stale, or renewing now
}

// SpareBatch returns an empty ArmingBatch, reused when one is spare.
func (w *Watcher[L]) SpareBatch() *ArmingBatch[L] {
	batch := w.spares.Take()
	if batch == nil {
		batch = &ArmingBatch[L]{}
	}
	batch.only = AllNodes
	return batch
}

// Add adds the arming of l's hold of the given generation, under tag;
// unsure is as Watcher.Arm takes it, copied.
func (b *ArmingBatch[L]) Add(l L, generation, tag uint64, unsure []bool) {
	holds := b.holds
	if len(holds) == cap(holds) {
		holds = append(holds, batchedArming[L]{})
	} else {
		holds = holds[:len(holds)+1] // keeps the buffers of token and unsure
	}
	hold := &holds[len(holds)-1]
	hold.lock, hold.generation, hold.tag, hold.done = l, generation, tag, false
	hold.unsure = append(hold.unsure[:0], unsure...)
	b.holds = holds
}

// StartBatch arms batch on a goroutine of its own, then keeps it spare.
func (w *Watcher[L]) StartBatch(batch *ArmingBatch[L]) {
	w.runningMu.Lock()
	defer w.runningMu.Unlock()
	if w.ctx.Err() != nil {
		w.giveBack(batch)
		return
	}
	w.running.Go(func() {
		w.armBatch(batch)
		w.giveBack(batch)
	})
}

// giveBack keeps batch, armed, for a later one.
func (w *Watcher[L]) giveBack(batch *ArmingBatch[L]) {
	var zero L
	for i := range batch.holds {
		batch.holds[i].lock = zero
	}
	batch.holds = batch.holds[:0]
	w.spares.Put(batch)
}

// armBatch arms the keys of each hold of the batch on each node the hold
// watches, as Arm does for one hold: node after node, the reads of every
// hold still current written together.
func (w *Watcher[L]) armBatch(batch *ArmingBatch[L]) {
	subscriber := w.subscriber()
	if subscriber == nil {
		return
	}
	for len(batch.requests) < len(batch.holds) {
		batch.requests = append(batch.requests, mux.NewRequest())
	}
	for node := range w.nodes {
		if batch.only != AllNodes && node != batch.only {
			continue
		}
		batch.armings, batch.index = batch.armings[:0], batch.index[:0]
		for i := range batch.holds {
			hold := &batch.holds[i]
			if hold.done {
				continue
			}
			l := hold.lock
			h := l.Hold()
			h.Mu.Lock()
			current := h.CurrentLocked(hold.generation) && !h.Lost && h.WatchTag == hold.tag && !h.Writing
			had := current && (h.Watching[node] || isUnsure(hold.unsure, node))
			hold.token = append(hold.token[:0], h.Token...)
			h.Mu.Unlock()
			if !current {
				hold.done = true
				continue
			}
			if !had {
				continue
			}
			keys := l.Keys()
			request := batch.requests[i]
			request.SetEval(protocol.Watch, len(keys), 0)
			for _, key := range keys {
				request.AppendString(key)
			}
			batch.armings = append(batch.armings, mux.Arming{Request: request, Tag: hold.tag, Keys: keys})
			batch.index = append(batch.index, i)
		}
		if len(batch.armings) == 0 {
			continue
		}
		subscriber.TrackAll(w.ctx, node, batch.armings)
		now := w.clock.Now()
		for j := range batch.armings {
			arming := &batch.armings[j]
			hold := &batch.holds[batch.index[j]]
			if arming.Err != nil {
				w.refused(node, arming.Err)
			}
			h := hold.lock.Hold()
			h.Mu.Lock()
			current := h.CurrentLocked(hold.generation) && !h.Lost && h.WatchTag == hold.tag
			renew := current && judgeLocked(h, node, isUnsure(hold.unsure, node), arming.Request.Reply(), arming.Err, hold.token, h.Until.Sub(now))
			h.Mu.Unlock()
			if renew {
				hold.lock.RenewNow(hold.generation)
				hold.done = true
			}
		}
		for j := range batch.armings {
			batch.armings[j] = mux.Arming{}
		}
	}
}

// Reconnected arms again, on node's new subscription connection, the keys
// of every watched hold, batch after batch on one goroutine, so that a
// connection has at most one batch of reads under way: the former
// connection's armings ended with it, and a first connection finds the
// holds armed before it. A hold that does not watch node is judged by its
// read (see Arm): its reply to the hold's last write may not have been
// awaited.
func (w *Watcher[L]) Reconnected(node int) {
	judge := make([]bool, w.nodes)
	judge[node] = true
	var batches []*ArmingBatch[L]
	for l := range w.Watching() {
		h := l.Hold()
		h.Mu.Lock()
		generation, tag, armed, watching := h.Generation, h.WatchTag, h.Held && !h.Lost && !h.Writing, h.Watching[node]
		h.Mu.Unlock()
		if !armed {
			continue
		}
		if len(batches) == 0 || len(batches[len(batches)-1].holds) == MaxRenewalBatch {
			batch := w.SpareBatch()
			batch.only = node
			batches = append(batches, batch)
		}
		batch := batches[len(batches)-1]
		if watching {
			batch.Add(l, generation, tag, nil)
		} else {
			batch.Add(l, generation, tag, judge)
		}
	}
	started := len(batches) > 0 && w.Go(func() {
		for _, batch := range batches {
			w.armBatch(batch)
			w.giveBack(batch)
		}
	})
	if !started {
		for _, batch := range batches {
			w.giveBack(batch)
		}
	}
}
