package conn

import "time"

// pending is one command whose reply has not been read. A nil call is a
// command whose caller stopped waiting: its reply is read and dropped.
type pending struct {
	call     *Call
	deadline time.Time
	// For an abandoned script call, what it takes to answer NOSCRIPT with
	// EVAL: the script, the command's element count, and where its shared
	// tail (numkeys, keys, arguments) was copied in the Conn's tails buffer.
	script             *Script
	arrayLength        int
	tailStart, tailEnd int
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
		grown := make([]pending, max(8, 2*len(q.entries)))
		for i := 0; i < q.length; i++ {
			grown[i] = q.entries[(q.head+i)%len(q.entries)]
		}
		q.entries, q.head = grown, 0
	}
	q.entries[(q.head+q.length)%len(q.entries)] = entry
	q.length++
}

func (q *queue) pop() (pending, bool) {
	if q.length == 0 {
		return pending{}, false
	}
	entry := q.entries[q.head]
	q.entries[q.head] = pending{}
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
