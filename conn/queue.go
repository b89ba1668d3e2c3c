package conn

import "time"

// pending is one command whose reply has not been read, or, while there is
// no live connection, one command waiting to be written on the next one.
type pending struct {
	// call is the command's owner; nil once the owner stopped waiting. An
	// entry without an owner that is not carried is read and dropped.
	call *Call
	// deadline is when the server must have answered, if somebody still
	// needs the answer; zero while the command is not written. span is the
	// time the caller gave the server, used again when a carried command is
	// written on a new connection.
	deadline time.Time
	span     time.Duration
	// carry marks a command that must take effect whether or not anybody
	// waits (Call.Carry): until is when it stops mattering, label names it
	// in reports, and command holds its bytes once its owner let go of the
	// Call. The buffer belongs to the queue's slot and is reused, so that
	// carrying a command does not allocate in steady state.
	carry   bool
	until   time.Time
	label   string
	command []byte
	// deliver marks a command to write on the connection being dialled
	// whether or not its owner still waits (Call.Deliver); command holds
	// its bytes once its owner let go of the Call.
	deliver bool
	// sharesNext marks a follow-up whose reply is also the next entry's:
	// the two were queued as one command (see Conn.QueueFollowed).
	sharesNext bool
	// places are where the queue's heaps hold the entry, plus one: 0 in a
	// heap the entry is not in (see heapKind).
	places [heapKinds]int32
}

// needed reports whether somebody needs the entry's answer: its owner, or
// the Conn itself for a carried command. Only a needed entry that is late
// fails the connection.
func (p *pending) needed() bool { return p.call != nil || p.carry }

// wanted reports whether an entry that is not written yet must be written
// on the next connection: it is needed, or delivered.
func (p *pending) wanted() bool { return p.needed() || p.deliver }

// bytes returns the command of an entry that is not written yet.
func (p *pending) bytes() []byte {
	if p.call != nil {
		return p.call.Command
	}
	return p.command
}

// queue is a FIFO ring of pending commands, in the order they were issued.
// It grows as needed and never shrinks, so steady state does not allocate.
// Besides the ring it keeps heaps of its slots (see heapKind) and a count
// of the entries with an owner, so that no send or reply walks the calls in
// flight: a connection with thousands of them costs per call what one with
// a few does.
type queue struct {
	entries []pending
	head    int
	length  int
	heaps   [heapKinds][]int32
	owned   int // entries whose call is not nil
	// pushed counts the entries ever pushed, and kept the calls of keep,
	// so that a position can be named by the push that filled it (see
	// tailMark): the head entry is push number pushed - length.
	pushed uint64
	kept   uint64
}

func (q *queue) len() int { return q.length }

// push appends entry. The slot keeps its own command buffer: a carried
// entry's bytes are copied into it.
func (q *queue) push(entry pending) *pending {
	if q.length == len(q.entries) {
		q.grow()
	}
	index := (q.head + q.length) % len(q.entries)
	slot := &q.entries[index]
	command := append(slot.command[:0], entry.command...)
	*slot = entry
	slot.command = command
	slot.places = [heapKinds]int32{}
	q.length++
	q.pushed++
	if slot.call != nil {
		slot.call.slot = index
		q.owned++
	}
	q.update(index)
	return slot
}

// exchange swaps the i-th and the j-th oldest entries.
func (q *queue) exchange(i, j int) {
	slots := [2]int{(q.head + i) % len(q.entries), (q.head + j) % len(q.entries)}
	first, second := &q.entries[slots[0]], &q.entries[slots[1]]
	*first, *second = *second, *first
	for _, slot := range slots {
		entry := &q.entries[slot]
		if entry.call != nil {
			entry.call.slot = slot
		}
		for kind := range heapKinds {
			if place := entry.places[kind]; place != 0 {
				q.heaps[kind][place-1] = int32(slot)
			}
		}
	}
	// The waiting heap is ordered by age, which the two swapped.
	for _, slot := range slots {
		if place := q.entries[slot].places[heapWaiting]; place != 0 {
			if !q.down(heapWaiting, int(place)-1) {
				q.up(heapWaiting, int(place)-1)
			}
		}
	}
}

// commandCapacity is the room for a carried command that each of the
// first preparedSlots slots of the queue starts with: enough for a
// release, so that carrying one does not allocate.
const commandCapacity = 512

// preparedSlots is how many slots get commandCapacity up front. The slots
// of a deeper pipeline get their buffers at first use, as large as their
// first command: thousands of renewals in flight would otherwise keep
// 512 bytes each for good.
const preparedSlots = 1024

// grow doubles the ring. The new slots among the first preparedSlots get
// their command buffers from one allocation, and the heaps room for every
// slot from another.
func (q *queue) grow() {
	grown := make([]pending, max(8, 2*len(q.entries)))
	for i := range q.entries {
		grown[i] = q.entries[(q.head+i)%len(q.entries)] // the free slots keep their buffers too
	}
	if prepared := min(len(grown), preparedSlots); prepared > len(q.entries) {
		buffers := make([]byte, (prepared-len(q.entries))*commandCapacity)
		for i := len(q.entries); i < prepared; i++ {
			start := (i - len(q.entries)) * commandCapacity
			grown[i].command = buffers[start : start : start+commandCapacity]
		}
	}
	q.entries, q.head = grown, 0
	heaps := make([]int32, int(heapKinds)*len(grown))
	for kind := range heapKinds {
		start := int(kind) * len(grown)
		q.heaps[kind] = heaps[start : start : start+len(grown)]
	}
	q.rebuild()
}

// pop removes the oldest entry and returns it. Its command bytes stay valid
// until the slot is pushed again.
func (q *queue) pop() (pending, bool) {
	if q.length == 0 {
		return pending{}, false
	}
	slot := &q.entries[q.head]
	for kind := range heapKinds {
		if slot.places[kind] != 0 {
			q.heapRemove(kind, q.head)
		}
	}
	if slot.call != nil {
		q.owned--
	}
	entry := *slot
	*slot = pending{command: slot.command[:0]}
	q.head = (q.head + 1) % len(q.entries)
	q.length--
	return entry, true
}

// at returns a pointer to the i-th oldest entry.
func (q *queue) at(i int) *pending {
	return &q.entries[(q.head+i)%len(q.entries)]
}

// keep keeps, in order, the entries for which keep reports true, and
// forgets the others. keep may change the entry it is given. Slots are
// swapped, never shared, so every slot keeps a buffer of its own.
func (q *queue) keep(keep func(*pending) bool) {
	q.kept++
	kept := 0
	for i := 0; i < q.length; i++ {
		entry := q.at(i)
		if !keep(entry) {
			continue
		}
		if kept != i {
			target := q.at(kept)
			*target, *entry = *entry, *target
		}
		kept++
	}
	for i := kept; i < q.length; i++ {
		entry := q.at(i)
		*entry = pending{command: entry.command[:0]}
	}
	q.length = kept
	q.rebuild()
}

// isOneRun reports whether the entries queued are one run of follow-ups
// that share a reply (see pending.sharesNext): every one but the last
// shares the next one's. An empty queue is not.
func (q *queue) isOneRun() bool {
	for i := 0; i < q.length; i++ {
		if q.at(i).sharesNext != (i < q.length-1) {
			return false
		}
	}
	return q.length > 0
}

// earliestDeadline returns the earliest deadline of the written entries
// that are needed, or the zero time when none is.
func (q *queue) earliestDeadline() time.Time {
	if slot := q.root(heapNeeded); slot >= 0 {
		return q.entries[slot].deadline
	}
	return time.Time{}
}

// firstWaiting returns the oldest call whose owner is blocked in Wait.
func (q *queue) firstWaiting() *Call {
	if slot := q.root(heapWaiting); slot >= 0 {
		return q.entries[slot].call
	}
	return nil
}

// setWaiting records whether call's owner is blocked in Wait.
func (q *queue) setWaiting(call *Call, waiting bool) {
	call.waiting = waiting
	if q.find(call) != nil {
		q.update(call.slot)
	}
}

// ownedBefore reports whether an entry older than the newest one has an
// owner: somebody waits for a reply ahead of it.
func (q *queue) ownedBefore() bool {
	owned := q.owned
	if q.length > 0 && q.at(q.length-1).call != nil {
		owned--
	}
	return owned > 0
}

// earliestCarried returns the earliest deadline of the carried entries
// that are written, or the zero time when there is none.
func (q *queue) earliestCarried() time.Time {
	if slot := q.root(heapCarried); slot >= 0 {
		return q.entries[slot].deadline
	}
	return time.Time{}
}

// find returns call's entry, or nil when call is not queued.
func (q *queue) find(call *Call) *pending {
	if call.slot < 0 || call.slot >= len(q.entries) {
		return nil
	}
	if entry := &q.entries[call.slot]; entry.call == call {
		return entry
	}
	return nil
}

// detach takes call's owner away from its entry, which stays queued, and
// returns the entry, or nil when call is not queued.
func (q *queue) detach(call *Call) *pending {
	entry := q.find(call)
	if entry == nil {
		return nil
	}
	entry.call = nil
	q.owned--
	q.update(call.slot)
	return entry
}
