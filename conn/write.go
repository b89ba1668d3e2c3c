package conn

import (
	"fmt"
	"os"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// Send queues the call's command and returns without waiting for the
// reply; the call must then be given to Wait or Abandon. The deadline,
// Options.CommandTimeout when zero, is the server's: a reply still needed
// and not in by then closes the connection, failing every call in flight.
// On a busy connection Send buffers the command with other callers' and
// reports true: call Flush, or Wait, which flushes first. Without a live
// connection it dials (unless Options.NoDialOnSend) and queues the command
// behind the dial; during the backoff after a failed dial it fails the
// call at once with ErrNotConnected. A carried call is kept (Call.Carry).
func (c *Conn) Send(call *Call, deadline time.Time) (buffered bool) {
	// Writing many callers' commands in one system call is what makes a
	// shared connection faster than one per caller. A caller that stops
	// waiting (Wait's context, Abandon) costs the connection nothing.
	now := time.Now()
	if deadline.IsZero() {
		deadline = now.Add(c.options.CommandTimeout)
	}
	if call.wake == nil {
		call.wake = make(chan struct{}, 1)
	}
	call.sentOn = c
	c.mu.Lock()
	call.Reply = resp.Value{}
	call.Err = nil
	call.Latency = 0
	call.retried = false
	call.abandoned = false
	if !call.followed {
		call.follow = nil
	}
	call.sentAt = now
	call.deadline = deadline
	if c.link == nil && !c.closed && !c.options.NoDialOnSend {
		c.startDialLocked()
	}
	if c.closed || (c.link == nil && !c.dialing) {
		err := ErrClosed
		if !c.closed {
			err = c.notConnectedLocked()
			if call.Carry {
				c.carryLocked(pending{span: deadline.Sub(now), carry: true, until: call.CarryUntil, label: call.Label, command: call.Command})
			}
		}
		call.state = callIdle
		call.Err = err
		c.finishedLocked(call)
		c.mu.Unlock()
		return false
	}
	if c.pending.len() >= maxPending && c.link != nil {
		// A server that stopped answering while every caller gave up
		// waiting: the queue must not grow without bound.
		c.failLinkLocked(c.link, fmt.Errorf("%w: %d commands unanswered", os.ErrDeadlineExceeded, c.pending.len()))
		c.mu.Unlock()
		return c.Send(call, deadline)
	}
	call.state = callQueued
	entry := pending{call: call, span: deadline.Sub(now), carry: call.Carry, until: call.CarryUntil, label: call.Label, deliver: call.Deliver}
	if call.Carry {
		c.carried++
	}
	if c.link == nil {
		// A dial is under way: the command is written when it completes
		// (see installLocked), if that is before the deadline (see Wait).
		c.pending.push(entry)
		c.mu.Unlock()
		return true
	}
	entry.deadline = deadline
	earliest := c.pending.earliestDeadline()
	c.pending.push(entry)
	c.writeBuffer = append(c.writeBuffer, call.Command...)
	if earliest.IsZero() || deadline.Before(earliest) {
		if c.reading {
			// The reader is blocked right now: Go lets the deadline of a
			// pending Read be moved from another goroutine.
			c.readDeadline = socketDeadline(deadline, now)
			c.link.netConn.SetReadDeadline(c.readDeadline)
		}
	}
	if !c.reading && !c.flushing && !c.pending.ownedBefore() {
		c.readArrivedLocked(c.link, call, nil)
	}
	buffered = c.flushing || c.pending.len() > 1 || call.followed
	if !buffered {
		c.flushLocked()
	}
	c.mu.Unlock()
	return buffered
}

// SendFollowed sends call and, right behind it, follow, in one write when
// the connection is up: follow's reply tells what the server held just
// after it ran call. Each must then be given to Wait or Abandon.
func (c *Conn) SendFollowed(call, follow *Call, deadline time.Time) {
	call.followed, call.follow = true, follow
	c.Send(call, deadline)
	call.followed = false
	c.Send(follow, deadline)
	c.Flush()
}

// maxPending bounds the commands in flight on one connection; past it, the
// server is taken as stalled and the connection is closed.
const maxPending = 1 << 16

// Flush writes the commands left in the write buffer, unless another
// caller is writing them already.
func (c *Conn) Flush() {
	c.mu.Lock()
	if !c.flushing {
		c.flushLocked()
	}
	c.mu.Unlock()
}

// flushLocked writes the buffered commands until none is left. Commands
// that other callers append while it writes go out with the next write.
func (c *Conn) flushLocked() {
	c.flushing = true
	for len(c.writeBuffer) > 0 && c.link != nil {
		link := c.link
		buffer := c.writeBuffer
		c.writeBuffer = c.spareBuffer[:0]
		// A write blocks only when the socket's buffer is full: a deadline
		// a little earlier than needed does no harm, so the one set for
		// earlier calls stays while it is due no later than the calls and
		// not before readGrace from now. That saves moving a timer on
		// every write.
		now := time.Now()
		deadline := socketDeadline(c.dueLocked(now), now)
		if c.writeDeadline.After(deadline) || c.writeDeadline.Before(now.Add(readGrace)) {
			c.writeDeadline = deadline
			link.netConn.SetWriteDeadline(deadline)
		}
		c.mu.Unlock()
		_, err := link.netConn.Write(buffer)
		c.mu.Lock()
		c.spareBuffer = buffer[:0]
		if err != nil {
			c.failLinkLocked(link, err)
		}
	}
	c.flushing = false
}
