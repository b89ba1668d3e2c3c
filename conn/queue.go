package conn

import "time"

// pending is one command whose reply has not been read. A nil call is a
// command whose caller stopped waiting: its reply is read and dropped.
type pending struct {
	call     *Call
	deadline time.Time
	// For an abandoned script call, what it takes to answer NOSCRIPT with
	// EVAL: the script, the command's element count, and a copy of its
	// tail (numkeys, keys, arguments). The tail's buffer belongs to the
	// queue's slot and is reused, so that abandoning does not allocate in
	// steady state.
	script      *Script
	arrayLength int
	tail        []byte
}

// queue is a FIFO ring of pending commands, in the order they were written.
// It grows as needed and never shrinks, so steady state does not allocate.
type queue struct {
	entries []pending
	head    int
	length  int
}

func (q *queue) len() int { return q.length }

func (q *queue) push(entry pending) {
	if q.length == len(q.entries) {
		q.grow()
	}
	slot := &q.entries[(q.head+q.length)%len(q.entries)]
	tail := slot.tail[:0]
	*slot = entry
	slot.tail = tail // the slot keeps its buffer
	q.length++
}

// tailCapacity is the room for an abandoned script call's tail that every
// slot of the queue starts with: enough for a lock key and a token, so
// that abandoning a call does not allocate.
const tailCapacity = 128

// grow doubles the ring. The new slots get their tail buffers from one
// allocation.
func (q *queue) grow() {
	grown := make([]pending, max(8, 2*len(q.entries)))
	for i := range q.entries {
		grown[i] = q.entries[(q.head+i)%len(q.entries)] // the free slots keep their buffers too
	}
	tails := make([]byte, (len(grown)-len(q.entries))*tailCapacity)
	for i := len(q.entries); i < len(grown); i++ {
		start := (i - len(q.entries)) * tailCapacity
		grown[i].tail = tails[start : start : start+tailCapacity]
	}
	q.entries, q.head = grown, 0
}

func (q *queue) pop() (pending, bool) {
	if q.length == 0 {
		return pending{}, false
	}
	slot := &q.entries[q.head]
	entry := *slot
	*slot = pending{tail: slot.tail[:0]} // its tail stays valid until the slot is pushed again
	q.head = (q.head + 1) % len(q.entries)
	q.length--
	return entry, true
}

// at returns a pointer to the i-th oldest entry.
func (q *queue) at(i int) *pending {
	return &q.entries[(q.head+i)%len(q.entries)]
}

// earliestDeadline returns the earliest deadline of the pending commands
// that still have an owner, or the zero time when none has.
func (q *queue) earliestDeadline() time.Time {
	var earliest time.Time
	for i := 0; i < q.length; i++ {
		entry := q.at(i)
		if entry.call != nil && (earliest.IsZero() || entry.deadline.Before(earliest)) {
			earliest = entry.deadline
		}
	}
	return earliest
}

// firstWaiting returns the oldest call whose owner is blocked in Wait.
func (q *queue) firstWaiting() *Call {
	for i := 0; i < q.length; i++ {
		if call := q.at(i).call; call != nil && call.waiting {
			return call
		}
	}
	return nil
}

// ownerlessBefore reports whether call has the newest entry and no entry
// before it has a call: nobody waits for a reply ahead of call's.
func (q *queue) ownerlessBefore(call *Call) bool {
	if q.length == 0 || q.at(q.length-1).call != call {
		return false
	}
	for i := 0; i < q.length-1; i++ {
		if q.at(i).call != nil {
			return false
		}
	}
	return true
}

// drop forgets call's entry, keeping its place so that its reply is still
// read and discarded in order, and returns it; nil when call is not queued.
func (q *queue) drop(call *Call) *pending {
	for i := 0; i < q.length; i++ {
		if entry := q.at(i); entry.call == call {
			entry.call = nil
			return entry
		}
	}
	return nil
}
