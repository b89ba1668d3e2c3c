package turn

import (
	"runtime"
	"sync/atomic"
)

// Turn is a lock's exclusion within this process: a lock that a
// goroutine waiting for it can leave when its context ends. Its channel
// is made by the first goroutine that waits, so a Mutex that no two
// goroutines of the process contend keeps none. Any goroutine may give
// the turn back; a give while the taker is pinned (Pin) waits for Unpin.
type Turn struct {
	// state is turnTaken while somebody has the turn, plus turnWaiter for
	// each goroutine waiting for it that no give has served yet, plus
	// turnPinned and turnDeferred (see Pin).
	state atomic.Uint32
	// handed carries the turn from a give to one waiter; made on first
	// wait, buffered, and it holds at most the one turn.
	handed atomic.Pointer[chan struct{}]
}

const (
	turnTaken    uint32 = 1
	turnWaiter   uint32 = 2
	turnPinned   uint32 = 1 << 30
	turnDeferred uint32 = 1 << 31
	turnFlags           = turnPinned | turnDeferred
)

// TryTake takes the turn if nobody has it, and reports whether it did.
func (t *Turn) TryTake() bool { return t.state.CompareAndSwap(0, turnTaken) }

// Take takes the turn, waiting until it is given, or until done or
// closing is closed; then it reports false.
func (t *Turn) Take(done, closing <-chan struct{}) bool {
	for {
		state := t.state.Load()
		if state == 0 {
			if t.state.CompareAndSwap(0, turnTaken) {
				return true
			}
			continue
		}
		handed := t.channel() // made before the count, which a give answers on it
		if !t.state.CompareAndSwap(state, state+turnWaiter) {
			continue
		}
		select {
		case <-handed:
			return true
		case <-done:
		case <-closing:
		}
		t.stopWaiting(handed)
		return false
	}
}

// stopWaiting takes a waiter that stops waiting out of the count; when
// every waiter counted was served by a give, a turn is on its way to one
// of them, and this one passes it on if it gets it.
func (t *Turn) stopWaiting(handed chan struct{}) {
	for !t.leave() {
		select {
		case <-handed:
			t.Give()
			return
		default:
			runtime.Gosched() // the give is between its count and its send
		}
	}
}

// leave takes one waiter out of the count, and reports whether one was
// left to take.
func (t *Turn) leave() bool {
	for {
		state := t.state.Load()
		if state&^turnFlags < turnWaiter {
			return false
		}
		if t.state.CompareAndSwap(state, state-turnWaiter) {
			return true
		}
	}
}

// Give gives the turn back: to a waiting goroutine, or to nobody.
func (t *Turn) Give() {
	for {
		state := t.state.Load()
		if state&turnPinned != 0 {
			if t.state.CompareAndSwap(state, state|turnDeferred) {
				return // Unpin gives it
			}
			continue
		}
		if state == turnTaken {
			if t.state.CompareAndSwap(turnTaken, 0) {
				return
			}
			continue
		}
		if t.state.CompareAndSwap(state, state-turnWaiter) {
			*t.handed.Load() <- struct{}{}
			return
		}
	}
}

// Pin keeps the turn with the goroutine that has it until Unpin: a give
// meanwhile, by any goroutine, happens at Unpin. A Lock pins the turn
// while it runs, so that an Unlock of the hold it won, before it returned,
// passes the turn on only once nothing of the Lock runs any more.
func (t *Turn) Pin() {
	for {
		state := t.state.Load()
		if t.state.CompareAndSwap(state, state|turnPinned) {
			return
		}
	}
}

// Unpin ends Pin, and makes the give that came meanwhile, if one did.
func (t *Turn) Unpin() {
	for {
		state := t.state.Load()
		if t.state.CompareAndSwap(state, state&^turnFlags) {
			if state&turnDeferred != 0 {
				t.Give()
			}
			return
		}
	}
}

// channel returns the channel that hands the turn over, made on first use.
func (t *Turn) channel() chan struct{} {
	if handed := t.handed.Load(); handed != nil {
		return *handed
	}
	handed := make(chan struct{}, 1)
	if !t.handed.CompareAndSwap(nil, &handed) {
		return *t.handed.Load()
	}
	return handed
}

// Contended reports whether goroutines ever contended for t: it made its
// channel.
func (t *Turn) Contended() bool { return t.handed.Load() != nil }
