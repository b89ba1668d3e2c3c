package conn

// heapKind names one of the queue's heaps. Each keeps the slots of the
// entries that belong to it (see queue.belongs), the first at its root, so
// that a send or a reply finds the first waiting call and the earliest
// deadline without walking the calls in flight.
type heapKind uint8

const (
	// heapNeeded holds the written entries that somebody needs, by
	// deadline: the earliest is when the socket must have answered.
	heapNeeded heapKind = iota
	// heapCarried holds the written carried entries, by deadline: the
	// earliest is when the finisher must read.
	heapCarried
	// heapWaiting holds the entries whose owner is blocked in Wait, by
	// age: the oldest is the next reader.
	heapWaiting
	heapKinds
)

// belongs reports whether entry belongs in the heap of kind.
func (q *queue) belongs(kind heapKind, entry *pending) bool {
	switch kind {
	case heapNeeded:
		return entry.needed() && !entry.deadline.IsZero()
	case heapCarried:
		return entry.carry && !entry.deadline.IsZero()
	default:
		return entry.call != nil && entry.call.waiting
	}
}

// update puts the entry in slot into the heaps it belongs in, and takes it
// out of the others, after a change to the entry.
func (q *queue) update(slot int) {
	entry := &q.entries[slot]
	for kind := range heapKinds {
		switch in := entry.places[kind] != 0; {
		case !in && q.belongs(kind, entry):
			q.heapPush(kind, slot)
		case in && !q.belongs(kind, entry):
			q.heapRemove(kind, slot)
		}
	}
}

// rebuild makes the heaps, the owner count and the calls' slots anew, after
// the entries moved (grow, keep).
func (q *queue) rebuild() {
	for kind := range heapKinds {
		q.heaps[kind] = q.heaps[kind][:0]
	}
	q.owned = 0
	for i := 0; i < q.length; i++ {
		slot := (q.head + i) % len(q.entries)
		entry := &q.entries[slot]
		entry.places = [heapKinds]int32{}
		if entry.call != nil {
			entry.call.slot = slot
			q.owned++
		}
		q.update(slot)
	}
}

// root returns the slot at the root of the heap of kind, or -1 when the
// heap is empty.
func (q *queue) root(kind heapKind) int {
	if len(q.heaps[kind]) == 0 {
		return -1
	}
	return int(q.heaps[kind][0])
}

// less reports whether slot a comes before slot b in the heap of kind.
func (q *queue) less(kind heapKind, a, b int32) bool {
	if kind == heapWaiting {
		return q.age(int(a)) < q.age(int(b))
	}
	return q.entries[a].deadline.Before(q.entries[b].deadline)
}

// age returns how many entries were queued before the one in slot.
func (q *queue) age(slot int) int {
	return (slot - q.head + len(q.entries)) % len(q.entries)
}

// heapPush adds slot to the heap of kind. The heap has room for every slot
// of the ring, so it does not allocate.
func (q *queue) heapPush(kind heapKind, slot int) {
	q.heaps[kind] = append(q.heaps[kind], int32(slot))
	q.place(kind, len(q.heaps[kind])-1)
	q.up(kind, len(q.heaps[kind])-1)
}

// heapRemove takes slot out of the heap of kind.
func (q *queue) heapRemove(kind heapKind, slot int) {
	heap := q.heaps[kind]
	i := int(q.entries[slot].places[kind]) - 1
	last := len(heap) - 1
	q.entries[slot].places[kind] = 0
	heap[i] = heap[last]
	q.heaps[kind] = heap[:last]
	if i == last {
		return
	}
	q.place(kind, i)
	if !q.down(kind, i) {
		q.up(kind, i)
	}
}

// place records in its entry that the heap of kind holds it at i. Places
// are kept plus one, so that an entry's zero value is in no heap.
func (q *queue) place(kind heapKind, i int) {
	q.entries[q.heaps[kind][i]].places[kind] = int32(i + 1)
}

func (q *queue) swap(kind heapKind, i, j int) {
	heap := q.heaps[kind]
	heap[i], heap[j] = heap[j], heap[i]
	q.place(kind, i)
	q.place(kind, j)
}

// up moves the element at i towards the root while it comes before its
// parent.
func (q *queue) up(kind heapKind, i int) {
	heap := q.heaps[kind]
	for i > 0 {
		parent := (i - 1) / 2
		if !q.less(kind, heap[i], heap[parent]) {
			return
		}
		q.swap(kind, i, parent)
		i = parent
	}
}

// down moves the element at i away from the root while a child comes
// before it, and reports whether it moved.
func (q *queue) down(kind heapKind, i int) bool {
	heap := q.heaps[kind]
	start := i
	for {
		first := 2*i + 1
		if first >= len(heap) {
			break
		}
		if second := first + 1; second < len(heap) && q.less(kind, heap[second], heap[first]) {
			first = second
		}
		if !q.less(kind, heap[first], heap[i]) {
			break
		}
		q.swap(kind, i, first)
		i = first
	}
	return i > start
}
