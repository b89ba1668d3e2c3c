package spare

import "sync"

// Max bounds the values a List keeps.
const Max = 1024

// List is a free list of *T. The zero List is empty and ready; it is safe
// for concurrent use.
type List[T any] struct {
	mu    sync.Mutex
	spare []*T // guarded by mu
}

// Take returns a kept value, or nil when the List is empty.
func (l *List[T]) Take() *T {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.spare)
	if n == 0 {
		return nil
	}
	v := l.spare[n-1]
	l.spare[n-1] = nil
	l.spare = l.spare[:n-1]
	return v
}

// Put keeps v for a later Take, unless the List holds Max values already.
func (l *List[T]) Put(v *T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.spare) < Max {
		l.spare = append(l.spare, v)
	}
}

// Kept returns a copy of the values the List keeps, the next Take's last.
func (l *List[T]) Kept() []*T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*T(nil), l.spare...)
}
