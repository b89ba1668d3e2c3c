package conn

import (
	"context"
	"fmt"
	"time"
)

// Wait returns when the call's reply or error is in call.Reply or
// call.Err, or when ctx ends: the call is then abandoned (Call.Abandoned
// reports true and call.Err is ctx's error), and the connection goes on
// for everybody else. It first writes whatever commands are still
// buffered. While it waits, the caller may read the connection for other
// callers.
func (c *Conn) Wait(ctx context.Context, call *Call) {
	done := ctx.Done()
	c.mu.Lock()
	for call.state == callQueued {
		if done != nil && ctx.Err() != nil {
			c.abandonLocked(call, ctx.Err())
			break
		}
		if c.life.link == nil {
			c.waitForDialLocked(ctx, call)
			continue
		}
		if len(c.writer.buffer) > 0 && !c.writer.flushing {
			c.flushLocked()
			continue
		}
		if !c.reader.reading {
			c.readForLocked(ctx, call)
			continue
		}
		c.pending.setWaiting(call, true)
		c.mu.Unlock()
		select {
		case <-call.wake:
		case <-done:
		}
		c.mu.Lock()
		c.pending.setWaiting(call, false)
	}
	c.mu.Unlock()
}

// readForLocked reads the connection for call's owner, and for everybody
// waiting behind it, until call is done or ctx ends.
//
// A reader blocked in a system call is woken, when its context ends, by a
// read deadline in the past (see interruptReader), set by a function
// registered with context.AfterFunc (see doneWatch).
func (c *Conn) readForLocked(ctx context.Context, call *Call) {
	done := ctx.Done()
	c.reader.watch.watch(ctx, done, c)
	c.reader.done = done
	c.readLocked(readerCaller, call)
	c.reader.done = nil
	c.reader.watch.readEnded(done)
}

// waitForDialLocked waits, up to the call's deadline or until ctx ends, for
// the dial that will carry the call. If the deadline passes first, every
// call waiting for the dial fails with ErrNotConnected: none of them was
// written. Carried commands stay for the next connection.
func (c *Conn) waitForDialLocked(ctx context.Context, call *Call) {
	c.pending.setWaiting(call, true)
	c.mu.Unlock()
	timer := time.NewTimer(time.Until(call.deadline))
	select {
	case <-call.wake:
	case <-timer.C:
	case <-ctx.Done():
	}
	timer.Stop()
	c.mu.Lock()
	c.pending.setWaiting(call, false)
	if call.state == callQueued && c.life.link == nil && !time.Now().Before(call.deadline) {
		c.failPendingLocked(fmt.Errorf("%w: not connected again before the deadline", ErrNotConnected))
	}
}

// Abandon stops waiting for the call: its reply will be read and dropped
// by whoever reads the connection next, keeping the order of replies, and
// a carried call is still finished by the Conn. The call may be reused at
// once. Abandon does nothing for a call that already has its reply.
func (c *Conn) Abandon(call *Call) {
	c.mu.Lock()
	c.abandonLocked(call, errAbandoned)
	c.mu.Unlock()
}

// abandonLocked detaches a queued call from its entry, with err as its
// error. A carried entry keeps a copy of the command, and the finisher
// reads its reply if nobody else will.
func (c *Conn) abandonLocked(call *Call, err error) {
	if call.state != callQueued {
		return
	}
	if entry := c.pending.detach(call); entry != nil {
		if entry.deliver && entry.deadline.IsZero() {
			// Not written yet: the dial in progress writes it (Call.Deliver).
			entry.command = append(entry.command[:0], call.Command...)
		}
		if entry.carry {
			entry.command = append(entry.command[:0], call.Command...)
			if !c.carrier.finishing || c.carrier.due.IsZero() || entry.deadline.Before(c.carrier.due) {
				c.ensureFinisherLocked()
			}
		}
	}
	call.state = callIdle
	call.abandoned = true
	call.Err = err
	call.Latency = time.Since(call.sentAt)
	c.finishedLocked(call)
}

// finishedLocked tells Options.OnFinish that call is finished.
func (c *Conn) finishedLocked(call *Call) {
	if onFinish := c.options.OnFinish; onFinish != nil {
		onFinish(call)
	}
}
