package liveness

import "sync"

// Registry lists the locks that hold, so that closing their client can
// end their holds. Adding and removing a lock costs no allocation once
// the list has grown to the number of holds at once.
type Registry[L Lock] struct {
	mu     sync.Mutex
	closed bool // guarded by mu
	locks  []L  // guarded by mu; each hold's registryIndex is its place
}

// AddLocked lists l, whose hold starts. It reports false after Close:
// the hold must then be ended at once. The caller holds the hold's Mu.
func (r *Registry[L]) AddLocked(l L) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	l.Hold().registryIndex = len(r.locks)
	r.locks = append(r.locks, l)
	return true
}

// RemoveLocked forgets l, whose hold ended. The caller holds the hold's
// Mu.
func (r *Registry[L]) RemoveLocked(l L) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := l.Hold().registryIndex
	if i < 0 || i >= len(r.locks) || r.locks[i] != l {
		return // not listed: the hold started after Close, or Close took it
	}
	last := len(r.locks) - 1
	r.locks[i] = r.locks[last]
	r.locks[i].Hold().registryIndex = i
	var zero L
	r.locks[last] = zero
	r.locks = r.locks[:last]
	l.Hold().registryIndex = -1
}

// Close stops the listing and returns the locks listed, whose holds the
// caller ends.
func (r *Registry[L]) Close() []L {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	locks := r.locks
	r.locks = nil
	for _, l := range locks {
		l.Hold().registryIndex = -1
	}
	return locks
}
