package waiting

import (
	"bytes"
)

// maxIdentityLength is the longest release identity kept: the longest
// token a lock accepts.
const maxIdentityLength = 128

// release counts the nodes that announced one release of a lock, so that
// the release wakes one waiter, once a quorum of nodes has announced it:
// an attempt made sooner could not win. A release is known by its
// identity, which every node of one release announces.
type release struct {
	identity [maxIdentityLength]byte
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
func (n *Notifier) wakeFirstInLine(waiters *channelWaiters, first []byte) {
	for _, w := range waiters.list {
		if w.lined && bytes.Equal(w.lineID[:], first) {
			w.wake(causeLook)
			return
		}
	}
}

// EnterLine notes the identity of w's place in the line of a fair lock,
// and LeaveLine that it has none, for wakeFirstInLine.
func (n *Notifier) EnterLine(w *Waiter, id [WaiterIDLength]byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w.lineID, w.lined = id, true
}

// LeaveLine notes that w has no place in line.
func (n *Notifier) LeaveLine(w *Waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w.lined = false
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

// wakeOne wakes one waiter of a released lock: the longest listening and
// not picked yet, else the first with no attempt due, at its next wait.
// A writer goes first; a reader wakes the channel's other readers too.
// Nobody is woken when a waiter picked for the same release (its hash)
// on another channel waits on this one: its attempt tries this key too.
// The caller holds n.mu.
func (n *Notifier) wakeOne(channel string, waiters *channelWaiters, release uint64) {
	if waiters.isIdle {
		waiters.unheard = n.unheard.Add(1) // see Deliver
		return
	}
	if release != 0 {
		for _, w := range waiters.list {
			if w.pickedFor == release {
				return
			}
		}
	}
	var picked *Waiter
	// Writers first: a read/write lock's waiting writer is picked before
	// its readers.
	for _, w := range waiters.list {
		if w.lock.Kind() == KindWrite && w.listening.CompareAndSwap(true, false) {
			picked = w
			break
		}
	}
	for _, w := range waiters.list {
		if picked != nil {
			break
		}
		if w.listening.CompareAndSwap(true, false) {
			picked = w
		}
	}
	if picked == nil {
		for _, w := range waiters.list {
			if w.causes.Load()&causeLook == 0 {
				picked = w
				break
			}
		}
	}
	if picked == nil {
		return // each of them tries again at once
	}
	picked.releaseWakes.Add(1)
	picked.wokenOn, picked.pickedFor = channel, release
	picked.wake(causeLook)
	if picked.lock.Kind() == KindRead {
		// Readers share the lock: every reader waiting on the channel may
		// take it now.
		for _, w := range waiters.list {
			if w != picked && w.lock.Kind() == KindRead {
				w.wake(causeLook)
			}
		}
	}
}

// Released wakes at once one waiter of this Client on each key that lock,
// one of its own, releases under the given identity, once the release is
// sent, without waiting for its replies or for the announcements to come
// back from the nodes; they wake nobody else. It costs nothing when
// nobody waits.
func (n *Notifier) Released(lock Lock, identity []byte) {
	if n.waiting.Load() == 0 || lock.Kind() == KindFair {
		return // a fair lock's release wakes the first in line, whom only the nodes name
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, channel := range lock.ReleasedChannels() {
		// Counted as announced by a quorum: the nodes' own announcements of
		// it, before or after this, wake nobody else.
		if waiters := n.waiters[channel]; waiters != nil && waiters.release.announced(identity, 0) {
			n.wakeOne(channel, waiters, releaseHash(identity))
		}
	}
}
