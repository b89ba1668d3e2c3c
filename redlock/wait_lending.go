package redlock

import (
	"sync"

	"github.com/lockmux/lockmux/redlock/internal/round"
)

// maxSpareWaits bounds the spare wait states a Client keeps. They are on
// a free list, not a sync.Pool, which a garbage collection would empty.
const maxSpareWaits = 1024

// waitLender lends the wait states of a Client's locks while their Lock
// runs: a held or idle lock keeps none.
type waitLender struct {
	mu    sync.Mutex
	spare []*waitState // guarded by mu
}

// lend returns a spare wait state, or a new one.
func (l *waitLender) lend() *waitState {
	l.mu.Lock()
	n := len(l.spare)
	if n == 0 {
		l.mu.Unlock()
		return &waitState{}
	}
	w := l.spare[n-1]
	l.spare[n-1] = nil
	l.spare = l.spare[:n-1]
	l.mu.Unlock()
	return w
}

// giveBack keeps w for the next Lock, up to maxSpareWaits.
func (l *waitLender) giveBack(w *waitState) {
	l.mu.Lock()
	if len(l.spare) < maxSpareWaits {
		l.spare = append(l.spare, w)
	}
	l.mu.Unlock()
}

// lendWait borrows a wait state for the Lock or Acquire of the goroutine
// that has the turn, readied for this Mutex.
func (m *Mutex) lendWait() *waitState {
	w := m.client.waits.lend()
	w.Init(&m.client.notifier, (*waitingLock)(m))
	m.wait.Store(w)
	return w
}

// giveBackWait gives w back once the Retry that used it returned and it is
// out of line: nothing of it may be used afterwards. A fair Mutex's
// extras name its place in line (joinLine): they go too.
func (m *Mutex) giveBackWait(w *waitState) {
	m.wait.Store(nil)
	if m.kind == round.KindFair {
		m.acquisition.extras = nil
	}
	w.Detach()
	m.client.waits.giveBack(w)
}

// waitState returns the wait state lent to the Lock under way. The caller
// has the turn, within that Lock's Retry.
func (m *Mutex) waitState() *waitState { return m.wait.Load() }
