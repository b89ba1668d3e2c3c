package conn

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestQueueHeapsAgreeWithAWalk runs random sends, replies, abandonments,
// waits, exchanges and failures through a queue, and after each checks what its heaps
// say against a walk of every entry, as the queue answered before it kept
// heaps.
func TestQueueHeapsAgreeWithAWalk(t *testing.T) {
	random := rand.New(rand.NewPCG(1, 2))
	base := time.Unix(1_000_000, 0)
	var q queue
	calls := make([]Call, 64)
	idle := func() *Call {
		for range len(calls) {
			if call := &calls[random.IntN(len(calls))]; call.state == callIdle {
				return call
			}
		}
		return nil
	}
	queued := func() *Call {
		if q.len() == 0 {
			return nil
		}
		return q.at(random.IntN(q.len())).call
	}
	for step := range 20_000 {
		switch operation := random.IntN(11); {
		case operation < 3: // a send, written or waiting for a dial
			entry := pending{carry: random.IntN(4) == 0, span: time.Second}
			if random.IntN(8) != 0 {
				entry.deadline = base.Add(time.Duration(random.IntN(1000)) * time.Millisecond)
			}
			if call := idle(); call != nil && random.IntN(6) != 0 {
				call.state = callQueued
				entry.call = call
			}
			q.push(entry)
		case operation < 5: // a reply
			if entry, ok := q.pop(); ok && entry.call != nil {
				entry.call.state, entry.call.waiting = callIdle, false
			}
		case operation < 6: // an abandonment
			if call := queued(); call != nil {
				q.detach(call)
				call.state, call.waiting = callIdle, false
			}
		case operation < 8: // an owner starts or stops waiting
			if call := queued(); call != nil {
				q.setWaiting(call, !call.waiting)
			}
		case operation < 9: // a NOSCRIPT retry: a popped call queued again
			if entry, ok := q.pop(); ok {
				entry.deadline = base.Add(time.Duration(random.IntN(1000)) * time.Millisecond)
				q.push(entry)
			}
		case operation < 10: // a command goes in before follow-ups (exchange)
			if q.len() > 1 {
				q.exchange(random.IntN(q.len()), q.len()-1)
			}
		default: // a failure keeps some entries, without owners
			if random.IntN(20) == 0 {
				q.keep(func(entry *pending) bool {
					if entry.call != nil {
						entry.call.state, entry.call.waiting = callIdle, false
						entry.call = nil
					}
					return entry.carry
				})
			}
		}
		checkQueue(t, step, &q)
	}
}

// checkQueue compares the queue's answers with a walk of its entries.
func checkQueue(t *testing.T, step int, q *queue) {
	t.Helper()
	var earliest, carried time.Time
	var waiting *Call
	owned := false
	for i := 0; i < q.len(); i++ {
		entry := q.at(i)
		if entry.needed() && !entry.deadline.IsZero() && (earliest.IsZero() || entry.deadline.Before(earliest)) {
			earliest = entry.deadline
		}
		if entry.carry && !entry.deadline.IsZero() && (carried.IsZero() || entry.deadline.Before(carried)) {
			carried = entry.deadline
		}
		if waiting == nil && entry.call != nil && entry.call.waiting {
			waiting = entry.call
		}
		if i < q.len()-1 && entry.call != nil {
			owned = true
		}
		if entry.call != nil && q.find(entry.call) != entry {
			t.Fatalf("step %d: the call of entry %d is not found there", step, i)
		}
	}
	if got := q.earliestDeadline(); !got.Equal(earliest) {
		t.Fatalf("step %d: earliestDeadline %v, a walk finds %v", step, got, earliest)
	}
	if got := q.earliestCarried(); !got.Equal(carried) {
		t.Fatalf("step %d: earliestCarried %v, a walk finds %v", step, got, carried)
	}
	if got := q.firstWaiting(); got != waiting {
		t.Fatalf("step %d: firstWaiting %p, a walk finds %p", step, got, waiting)
	}
	if got := q.ownedBefore(); got != owned {
		t.Fatalf("step %d: ownedBefore %v, a walk finds %v", step, got, owned)
	}
}

// The first preparedSlots slots of a queue have room for a release up
// front; the slots of a deeper pipeline get a buffer at first use, as
// large as their command, and keep it.
func TestQueueSlotsBeyondThePreparedGetTheirBufferAtFirstUse(t *testing.T) {
	var q queue
	command := make([]byte, 100)
	for range 4 * preparedSlots {
		q.push(pending{command: command})
	}
	for i := range q.len() {
		room := cap(q.at(i).command)
		if i < preparedSlots && room != commandCapacity {
			t.Fatalf("prepared slot %d has room for %d bytes, not %d", i, room, commandCapacity)
		}
		if i >= preparedSlots && (room < len(command) || room >= commandCapacity) {
			t.Fatalf("slot %d has room for %d bytes for a %d-byte command", i, room, len(command))
		}
	}
	for range q.len() {
		q.pop()
	}
	if allocations := testing.AllocsPerRun(100, func() {
		for range 4 * preparedSlots {
			q.push(pending{command: command})
		}
		for range 4 * preparedSlots {
			q.pop()
		}
	}); allocations != 0 {
		t.Errorf("a queue that held as many before allocated %v times", allocations)
	}
}
