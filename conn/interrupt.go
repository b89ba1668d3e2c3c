package conn

import (
	"context"
	"time"
)

// doneWatch keeps the registration (context.AfterFunc) that interrupts
// the reader when its context ends (see interruptReader). A registration
// allocates, so the watch keeps the one of a context that read after read
// reuses, as a service's long-lived context: its reads allocate nothing,
// whatever reads without a Done channel come between (a release under
// context.Background). The registration of any other context is undone
// when its read ends: a context made for one call ends soon after it, and
// its registration would then start a goroutine that locks the Conn to
// interrupt a reader long gone. Conn.mu guards it, with the reader's turn.
type doneWatch struct {
	watched <-chan struct{} // the Done channel whose end interrupts the reader
	stop    func() bool     // undoes the registration for watched
	earlier <-chan struct{} // the Done channel of the previous read's context
}

// watch registers the interruption of c's reader on the end of ctx, whose
// Done channel is done, unless it is registered already.
func (w *doneWatch) watch(ctx context.Context, done <-chan struct{}, c *Conn) {
	if done != nil && done != w.watched {
		w.stopWatching()
		w.watched = done
		w.stop = context.AfterFunc(ctx, func() { c.interruptReader(done) })
	}
}

// readEnded undoes the registration for done, the Done channel of a read
// that ended, unless the read before used it too.
func (w *doneWatch) readEnded(done <-chan struct{}) {
	if done == nil {
		return
	}
	if done != w.earlier && w.watched == done {
		w.stopWatching()
	}
	w.earlier = done
}

// fired forgets the registration for done, whose function has run: a
// later use registers again.
func (w *doneWatch) fired(done <-chan struct{}) {
	if w.watched == done {
		w.watched, w.stop = nil, nil
	}
}

// stopWatching undoes the registration, if there is one.
func (w *doneWatch) stopWatching() {
	if w.stop != nil {
		w.stop()
		w.watched, w.stop = nil, nil
	}
}

// interruptReader wakes the reader whose context's Done channel is done,
// by a read deadline in the past: the reader tells that timeout from the
// server's by its closed Done channel.
func (c *Conn) interruptReader(done <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader.watch.fired(done)
	if c.reader.reading && c.reader.done == done && c.life.link != nil {
		c.reader.deadline = time.Unix(1, 0)
		c.life.link.netConn.SetReadDeadline(c.reader.deadline)
	}
}
