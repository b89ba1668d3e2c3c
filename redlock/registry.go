package redlock

import "sync"

// holdRegistry lists the Mutexes of a Client that hold a lock, so that
// Client.Close can end their holds. Adding and removing a Mutex costs no
// allocation once the list has grown to the number of holds at once.
type holdRegistry struct {
	mu      sync.Mutex
	closed  bool     // guarded by mu
	mutexes []*Mutex // guarded by mu; each Mutex's hold.registryIndex is its place
}

// add lists m, whose hold starts. It reports false after close: the hold
// must then be ended at once. The caller holds m.hold.mu.
func (r *holdRegistry) add(m *Mutex) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	m.hold.registryIndex = len(r.mutexes)
	r.mutexes = append(r.mutexes, m)
	return true
}

// remove forgets m, whose hold ended. The caller holds m.hold.mu.
func (r *holdRegistry) remove(m *Mutex) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := m.hold.registryIndex
	if i < 0 || i >= len(r.mutexes) || r.mutexes[i] != m {
		return // not listed: the hold started after close, or close took it
	}
	last := len(r.mutexes) - 1
	r.mutexes[i] = r.mutexes[last]
	r.mutexes[i].hold.registryIndex = i
	r.mutexes[last] = nil
	r.mutexes = r.mutexes[:last]
	m.hold.registryIndex = -1
}

// close stops the listing and ends the hold of every Mutex listed.
func (r *holdRegistry) close() {
	r.mu.Lock()
	r.closed = true
	mutexes := r.mutexes
	r.mutexes = nil
	for _, m := range mutexes {
		m.hold.registryIndex = -1
	}
	r.mu.Unlock()
	// Outside r.mu: the loss reaches the observer, who may unlock.
	for _, m := range mutexes {
		m.endByClose()
	}
}
