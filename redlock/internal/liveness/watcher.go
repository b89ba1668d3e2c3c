package liveness

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/spare"
)

// Watcher watches the keys of renewed holds, so that a key cut short or
// deleted from outside is noticed at once, not at the next renewal: each
// node's subscription connection tracks keys (mux.Subscriber.Track).
//
// A hold's own writes change its keys too, and must not count. Each own
// write gets a new tag (NewWriteTag), set in the hold before the write is
// sent; its reply arms the keys again under that tag where it went over
// a subscription connection (mux.Round.TrackOn), and Arm does elsewhere.
// A node reports a change with the tag of the last arming it answered
// before it, so an own write's change carries an older tag than the
// hold's, and a change from outside carries the hold's.
type Watcher[L WatchedLock] struct {
	nodes      int
	clock      Clock
	subscriber func() *mux.Subscriber // nil while no connection tracks keys
	refused    func(node int, err error)
	tags       atomic.Uint64
	ctx        context.Context // ends with the client
	cancel     context.CancelFunc
	// running counts the goroutines under way. Go adds to it and Close
	// waits for it under runningMu, once ctx ended.
	running   sync.WaitGroup
	runningMu sync.Mutex

	mu    sync.Mutex
	holds map[string]L // key → the lock whose renewed hold watches it
	// cannot says, per node, why it cannot watch keys (nil when it can),
	// and reported whether that was reported.
	cannot   []error
	reported []bool

	spares spare.List[ArmingBatch[L]] // arming batches done with
}

// WatchedLock is a lock whose renewed holds are watched.
type WatchedLock interface {
	Lock
	// Keys returns the lock's keys.
	Keys() []string
	// RenewNow renews the hold of the given generation at once: a key
	// changed from outside.
	RenewNow(generation uint64)
}

// Init readies w for the given number of nodes and clock. subscriber
// returns the connections that track keys; refused is told of an arming
// that a node refused, which may mean its ACL forbids the read.
func (w *Watcher[L]) Init(nodes int, clock Clock, subscriber func() *mux.Subscriber, refused func(node int, err error)) {
	w.nodes, w.clock, w.subscriber, w.refused = nodes, clock, subscriber, refused
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.holds = make(map[string]L)
	w.cannot = make([]error, nodes)
	w.reported = make([]bool, nodes)
}

// Context returns the context that ends when w closes.
func (w *Watcher[L]) Context() context.Context { return w.ctx }

// NewWriteTag returns the tag of an own write of a watched hold. The
// caller stores it in the hold before the write is sent.
func (w *Watcher[L]) NewWriteTag() uint64 { return w.tags.Add(1) }

// Go runs f on a goroutine that Close waits for. It reports false, and
// runs nothing, once w is closing.
func (w *Watcher[L]) Go(f func()) bool {
	w.runningMu.Lock()
	defer w.runningMu.Unlock()
	if w.ctx.Err() != nil {
		return false
	}
	w.running.Go(f)
	return true
}

// Watch lists the keys of l's hold, which starts.
func (w *Watcher[L]) Watch(l L) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, key := range l.Keys() {
		w.holds[key] = l
	}
}

// Forget unlists the keys of l's hold, which ends: their changes, the
// release's first, no longer count.
func (w *Watcher[L]) Forget(l L) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, key := range l.Keys() {
		if w.holds[key] == l {
			delete(w.holds, key)
		}
	}
}

// HolderOf returns the lock whose renewed hold watches key, if any.
func (w *Watcher[L]) HolderOf(key string) (L, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.holds[key]
	return l, ok
}

// Watching returns the locks whose renewed holds are watched.
func (w *Watcher[L]) Watching() map[L]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	locks := make(map[L]bool, len(w.holds))
	for _, l := range w.holds {
		locks[l] = true
	}
	return locks
}

// Invalidated renews at once the hold that watches key, unless the
// report's tag is older than the hold's last own write. A report under
// the current tag from a node the hold does not watch comes from an
// unsure node whose arming read did not show the keys (see Arm): its
// read may have come before the hold's own write there, or the node
// holds another client's key. The node is armed and judged again, and
// the hold renews only if that read finds its keys cut short.
func (w *Watcher[L]) Invalidated(node int, key string, tag uint64) {
	l, ok := w.HolderOf(key)
	if !ok {
		return
	}
	h := l.Hold()
	h.Mu.Lock()
	current := h.Held && !h.Lost && h.WatchTag == tag
	// A report under the tag of an own write still under way follows
	// that write's reply on a tracked round (see mux.Round.TrackOn): a
	// change from outside.
	watched := node < len(h.Watching) && h.Watching[node] || h.Writing
	generation := h.Generation
	h.Mu.Unlock()
	switch {
	case current && watched:
		l.RenewNow(generation)
	case current:
		w.StartJudging(l, generation, tag, node)
	}
}

// StartJudging arms l's hold of the given generation under tag on node
// alone, a node the hold does not watch, on a goroutine of w's: its read
// tells whether it holds the keys, as Arm does for an unsure node.
func (w *Watcher[L]) StartJudging(l L, generation, tag uint64, node int) {
	if node < 0 || node >= w.nodes {
		return
	}
	unsure := make([]bool, w.nodes)
	unsure[node] = true
	w.StartArming(l, generation, tag, node, unsure)
}

// Cannot keeps why node cannot watch keys, the first reason given.
func (w *Watcher[L]) Cannot(node int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cannot[node] == nil {
		w.cannot[node] = err
	}
}

// Unreported returns, each once, the nodes that cannot watch keys and
// why, if a hold is watched: a client that renews no hold has nothing to
// report.
func (w *Watcher[L]) Unreported() (nodes []int, reasons []error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.holds) == 0 {
		return nil, nil
	}
	for node, err := range w.cannot {
		if err != nil && !w.reported[node] {
			w.reported[node] = true
			nodes, reasons = append(nodes, node), append(reasons, err)
		}
	}
	return nodes, reasons
}

// Close ends the goroutines under way and waits for them.
func (w *Watcher[L]) Close() {
	w.runningMu.Lock()
	w.cancel()
	w.runningMu.Unlock()
	w.running.Wait()
}
