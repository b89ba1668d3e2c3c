package safety

import "strings"

// hold is what a history says about one hold.
type hold struct {
	id, key, worker string
	fence           int64
	ttl             int64
	// deadline is the latest validity the hold reported: its claims are
	// continuous, because an extension only counts when it ends within
	// the validity it extends.
	deadline int64

	acquireCall, acquireOK, enter, exit Event // zero Kind when missing
	extensions                          []extension
	releaseCall                         Event
	releaseOK                           bool
	lost                                int64 // stamp of KindLost or a closed KindDone, 0 if none

	stale bool // C1 found it inside after its validity
}

// extension is an explicit Extend: its call and its result.
type extension struct {
	call, result Event
}

// span is an interval of stamps; a canary's window also names its key.
type span struct {
	name, key  string
	start, end int64
}

// historyIndex is the first pass over a history.
type historyIndex struct {
	holds    map[string]*hold
	order    []*hold // in the order of acquisition
	acquired int     // KindAcquireOK events
	canaries []span  // canary windows
	pauses   []span  // client pauses; name is the process
	wipes    []int64 // stamps of KindWipe
	end      int64   // the last stamp
}

// index reads a history once.
func index(history []Event) *historyIndex {
	ix := &historyIndex{holds: make(map[string]*hold)}
	get := func(e Event) *hold {
		h := ix.holds[e.Hold]
		if h == nil {
			h = &hold{id: e.Hold, key: e.Key, worker: e.Worker}
			ix.holds[e.Hold] = h
			ix.order = append(ix.order, h)
		}
		if e.Deadline > h.deadline {
			h.deadline = e.Deadline
		}
		if e.Kind == KindAcquireOK {
			// A semaphore's hold is called on the semaphore and acquired
			// on the key of the permit it won.
			h.key = e.Key
		}
		return h
	}
	openCanaries := map[string]Event{}
	openPauses := map[string]int64{}
	for _, e := range history {
		ix.end = e.T
		switch e.Kind {
		case KindCanaryStart:
			openCanaries[e.What] = e
		case KindCanaryEnd:
			start := openCanaries[e.What]
			ix.canaries = append(ix.canaries, span{name: e.What, key: start.Key, start: start.T, end: e.T})
			delete(openCanaries, e.What)
		case KindNemesis:
			if e.What == "pause" && e.Worker != "" {
				openPauses[e.Worker] = e.T
			}
		case KindHeal:
			if e.What == "pause" && e.Worker != "" {
				if start, ok := openPauses[e.Worker]; ok {
					ix.pauses = append(ix.pauses, span{name: e.Worker, start: start, end: e.T})
					delete(openPauses, e.Worker)
				}
			}
		case KindWipe:
			ix.wipes = append(ix.wipes, e.T)
		}
		if e.Hold == "" || e.Kind == KindNemesis || e.Kind == KindHeal {
			continue
		}
		h := get(e)
		switch e.Kind {
		case KindAcquireCall:
			h.acquireCall, h.ttl = e, e.TTL
		case KindAcquireOK:
			h.acquireOK, h.fence = e, e.Fence
			ix.acquired++
		case KindEnter:
			h.enter = e
		case KindExit:
			h.exit = e
		case KindExtendCall:
			h.extensions = append(h.extensions, extension{call: e})
		case KindExtendOK, KindExtendFail:
			if n := len(h.extensions); n > 0 && h.extensions[n-1].result.Kind == "" {
				h.extensions[n-1].result = e
			}
		case KindLost:
			if h.lost == 0 {
				h.lost = e.T
			}
		case KindDone:
			if e.Err == "" && h.lost == 0 {
				h.lost = e.T
			}
		case KindReleaseCall:
			h.releaseCall = e
		case KindReleaseOK:
			h.releaseOK = true
		}
	}
	for name, start := range openCanaries {
		ix.canaries = append(ix.canaries, span{name: name, key: start.Key, start: start.T, end: ix.end + 1})
	}
	for name, start := range openPauses {
		ix.pauses = append(ix.pauses, span{name: name, start: start, end: ix.end + 1})
	}
	return ix
}

// canaryAt returns the canary window that holds stamp t and is about key
// (a window without a key is about every key), or "". A finding on
// another key than the canary's is not excused by it.
func (ix *historyIndex) canaryAt(t int64, key string) string {
	for _, c := range ix.canaries {
		if t >= c.start && t <= c.end && (c.key == "" || c.key == key) {
			return c.name
		}
	}
	return ""
}

// process returns the process part of a worker's name.
func process(worker string) string {
	name, _, _ := strings.Cut(worker, ".")
	return name
}

// paused reports whether the process of worker was paused at some time in
// [from, to].
func (ix *historyIndex) paused(worker string, from, to int64) bool {
	p := process(worker)
	for _, s := range ix.pauses {
		if s.name == p && s.start <= to && s.end >= from {
			return true
		}
	}
	return false
}

// wipedBetween reports whether a node lost its data in (from, to].
func (ix *historyIndex) wipedBetween(from, to int64) bool {
	for _, t := range ix.wipes {
		if t > from && t <= to {
			return true
		}
	}
	return false
}
