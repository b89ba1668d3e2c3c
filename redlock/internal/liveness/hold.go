package liveness

import (
	"sync"
	"sync/atomic"
	"time"
)

// closedChannel is what DoneOf returns when there is no hold.
var closedChannel = func() chan struct{} {
	channel := make(chan struct{})
	close(channel)
	return channel
}()

// Hold is the state of one lock's hold, which any goroutine may read.
// Mu guards every field but LongestTTL. Ends, Registry and Renewer
// keep their places in it under their own mutexes.
//
// A hold starts when an acquisition or a resumption wins, and ends
// (EndLocked) at Unlock or when an attempt drops it. In between it may be
// lost (MarkLost): Done closes, but it stays held for Unlock to release.
// Each start and each end counts a generation, so that a renewal, an
// extension or a timer of a hold that ended finds it gone.
type Hold struct {
	Mu      sync.Mutex
	Held    bool
	Lost    bool // the hold can no longer be proven; Done is closed
	Writing bool // an own write of a watched hold is under way: Arm arms nothing
	// Generation counts the starts and ends of holds.
	Generation uint64
	Token      []byte // the acquisition's value while held
	Acquired   time.Time
	Until      time.Time // the end of the validity, by the lock's clock
	Fence      int64     // 0 without fencing
	// TTL is the TTL of the hold's extensions. LongestTTL is the longest
	// any hold of the lock had, read without Mu.
	TTL        time.Duration
	LongestTTL atomic.Int64
	// Had is, per node, whether it confirmed the hold's acquisition, its
	// resumption or an extension: the nodes a repair may set keys on.
	Had []bool
	// Watching is, per node, whether a watched hold watches its keys
	// there: the node confirmed the hold's last own write, or its reply
	// was not awaited and its arming read showed the keys (see
	// Watcher.Arm). WatchTag is the tag of that write.
	Watching []bool
	WatchTag uint64
	OnLost   func(cause error) // called once when the hold is lost

	done chan struct{}
	// endAt and endPlace are guarded by the Ends' mutex: the moment the
	// hold's end is watched for, and one more than its index there.
	endAt    time.Time
	endPlace int
	// registryIndex is the lock's place in its Registry.
	registryIndex int
	// renewals counts the renewals scheduled for the lock's holds: the
	// last one scheduled is the one that counts.
	renewals atomic.Uint64
}

// CurrentLocked reports whether the hold of the given generation is the
// current one and held. The caller holds h.Mu.
func (h *Hold) CurrentLocked(generation uint64) bool {
	return h.Held && h.Generation == generation
}

// HeldLocked reports whether the hold of the given generation, or any
// hold for CurrentHold, is held. The caller holds h.Mu.
func (h *Hold) HeldLocked(generation uint64) bool {
	return h.Held && (generation == CurrentHold || h.Generation == generation)
}

// CurrentHold asks for the hold of whichever generation is current;
// generations start at 1.
const CurrentHold uint64 = 0

// UntilOf returns the end of the validity of the hold of the given
// generation, or the zero time when it is not held.
func (h *Hold) UntilOf(generation uint64) time.Time {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	if !h.HeldLocked(generation) {
		return time.Time{}
	}
	return h.Until
}

// IsHeld reports whether a hold is held.
func (h *Hold) IsHeld() bool {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	return h.Held
}

// ValueOf returns a copy of the value of the hold of the given
// generation, or nil when it is not held.
func (h *Hold) ValueOf(generation uint64) []byte {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	if !h.HeldLocked(generation) {
		return nil
	}
	return append([]byte(nil), h.Token...)
}

// FenceOf returns the fence of the hold of the given generation, or 0
// when it is not held.
func (h *Hold) FenceOf(generation uint64) int64 {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	if !h.HeldLocked(generation) {
		return 0
	}
	return h.Fence
}

// DoneOf returns the Done channel of the hold of the given generation:
// closed when it is not held or was lost.
func (h *Hold) DoneOf(generation uint64) <-chan struct{} {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	if !h.HeldLocked(generation) || h.Lost {
		return closedChannel
	}
	if h.done == nil {
		h.done = make(chan struct{})
	}
	return h.done
}

// StartLocked records a new hold and returns its generation. The caller
// holds h.Mu.
func (h *Hold) StartLocked(value []byte, start, until time.Time, fence int64, ttl time.Duration) uint64 {
	h.Held, h.Lost = true, false
	h.Token, h.Acquired, h.Until, h.Fence, h.TTL = value, start, until, fence, ttl
	h.Generation++
	return h.Generation
}

// EndLocked forgets the hold: Done closes, and a renewal or an extension
// in flight finds it gone. The caller holds h.Mu, and removes the lock
// from its Registry and Ends.
func (h *Hold) EndLocked() {
	if h.done != nil && !h.Lost {
		close(h.done)
	}
	h.Held, h.Lost, h.done, h.OnLost, h.Writing = false, false, nil, nil, false
	h.Token, h.Until, h.Acquired, h.Fence = nil, time.Time{}, time.Time{}, 0
	h.Generation++
}

// MarkLost marks the hold of the given generation lost, once, and closes
// Done. It reports whether it did, with the hold's OnLost and when it was
// acquired.
func (h *Hold) MarkLost(generation uint64) (onLost func(cause error), acquired time.Time, ok bool) {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	if !h.CurrentLocked(generation) || h.Lost {
		return nil, time.Time{}, false
	}
	h.Lost = true
	if h.done != nil {
		close(h.done)
	}
	return h.OnLost, h.Acquired, true
}

// ClosedChannel returns a channel that is closed: Done's when there is
// no hold.
func ClosedChannel() chan struct{} { return closedChannel }
