package redlock

import (
	"bytes"
)

// release counts the nodes that announced one release of a lock, so that
// the release wakes one waiter, once a quorum of nodes has announced it:
// an attempt made sooner could not win. A release is known by its
// identity, which every node of one release announces.
type release struct {
	identity [maxTokenLength]byte
	size     int  // the length of identity
	count    int  // the nodes that announced it
	woken    bool // a waiter was woken for it
}

// announced counts one node's announcement of the release with the given
// identity and reports whether it is the one that should wake a waiter.
func (r *release) announced(identity []byte, need int) bool {
	if !bytes.Equal(r.identity[:r.size], identity) {
		r.size = copy(r.identity[:], identity)
		r.count, r.woken = 0, false
	}
	r.count++
	if r.woken || r.count < need {
		return false
	}
	r.woken = true
	return true
}

// wakeFirstInLine wakes the fair lock's waiter that a release named the
// first in line, if it waits in this Client: a release wakes the next in
// line only, which may be another client's. The caller holds n.mu.
func (n *notifier) wakeFirstInLine(waiters *channelWaiters, first []byte) {
	for _, m := range waiters.mutexes {
		if m.wait.lined && bytes.Equal(m.wait.lineID[:], first) {
			m.wake(causeLook)
			return
		}
	}
}

// enterLine notes the identity of m's place in the line of a fair lock,
// and leaveLine that it has none, for wakeFirstInLine.
func (n *notifier) enterLine(m *Mutex, id [waiterIDLength]byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	m.wait.lineID, m.wait.lined = id, true
}

func (n *notifier) leaveLine(m *Mutex) {
	n.mu.Lock()
	defer n.mu.Unlock()
	m.wait.lined = false
}

// releaseHash returns a hash of a release's identity, to recognise the
// waiter picked for the same release on another key; 0 for an empty
// identity, which is no release's.
func releaseHash(identity []byte) uint64 {
	if len(identity) == 0 {
		return 0
	}
	hash := uint64(14695981039346656037) // FNV-1a
	for _, b := range identity {
		hash ^= uint64(b)
		hash *= 1099511628211
	}
	return hash | 1
}

// wakeOne wakes one of the waiters of a released lock, the one that waits
// longest among those listening for a release and not yet picked for one:
// one release makes one holder, and waking them all would only make them
// collide. When none listens (they are all trying, or backing off after a
// split vote), the first that has no attempt due yet gets the wake-up at
// its next wait. A waiter that leaves without the lock passes the wake-up
// on (see notifier.unregister); the others try again on their own after
// the fallback delay. A read/write lock's waiting writer goes first, and
// a reader picked wakes the other readers of the channel with it: readers
// share the lock.
//
// A release of several keys is announced on each of their channels: when
// a waiter picked for the same release (its hash, release) on another
// channel waits on this one too, its attempt tries this key as well, and
// nobody else is woken. The caller holds n.mu.
func (n *notifier) wakeOne(channel string, waiters *channelWaiters, release uint64) {
	if waiters.isIdle {
		waiters.unheard = n.unheard.Add(1) // see deliver
		return
	}
	if release != 0 {
		for _, m := range waiters.mutexes {
			if m.wait.pickedFor == release {
				return
			}
		}
	}
	var picked *Mutex
	// Writers first: a read/write lock's waiting writer is picked before
	// its readers (see RWMutex).
	for _, m := range waiters.mutexes {
		if m.kind == kindWrite && m.wait.listening.CompareAndSwap(true, false) {
			picked = m
			break
		}
	}
	for _, m := range waiters.mutexes {
		if picked != nil {
			break
		}
		if m.wait.listening.CompareAndSwap(true, false) {
			picked = m
		}
	}
	if picked == nil {
		for _, m := range waiters.mutexes {
			if m.wait.causes.Load()&causeLook == 0 {
				picked = m
				break
			}
		}
	}
	if picked == nil {
		return // each of them tries again at once
	}
	picked.wait.releaseWakes.Add(1)
	picked.wait.wokenOn, picked.wait.pickedFor = channel, release
	picked.wake(causeLook)
	if picked.kind == kindRead {
		// Readers share the lock: every reader waiting on the channel may
		// take it now.
		for _, m := range waiters.mutexes {
			if m != picked && m.kind == kindRead {
				m.wake(causeLook)
			}
		}
	}
}

// released wakes at once one waiter of this Client on each key that one of
// its Mutexes just released, under the given identity, without waiting for
// the announcements to come back from the nodes; they wake nobody else. It
// costs nothing when nobody waits.
func (n *notifier) released(m *Mutex, identity []byte) {
	if n.waiting.Load() == 0 || m.kind == kindFair {
		return // a fair lock's release wakes the first in line, whom only the nodes name
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, channel := range m.releasedChannels() {
		// Counted as announced by a quorum: the nodes' own announcements of
		// it, before or after this, wake nobody else.
		if waiters := n.waiters[channel]; waiters != nil && waiters.release.announced(identity, 0) {
			n.wakeOne(channel, waiters, releaseHash(identity))
		}
	}
}
