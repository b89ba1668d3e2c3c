package workgroup

import (
	"errors"
	"sync"
)

// Group runs functions on goroutines of their own and keeps the errors
// they return. The zero Group is ready to use.
type Group struct {
	wait sync.WaitGroup
	mu   sync.Mutex
	errs []error // guarded by mu; appended by the goroutines, read by Wait
}

// Go runs f on a new goroutine and keeps the error it returns, if any.
func (g *Group) Go(f func() error) {
	g.wait.Go(func() {
		if err := f(); err != nil {
			g.mu.Lock()
			g.errs = append(g.errs, err)
			g.mu.Unlock()
		}
	})
}

// Wait waits until every function started by Go has returned, and returns
// their errors joined, or nil when none returned one.
func (g *Group) Wait() error {
	g.wait.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.errs...)
}
