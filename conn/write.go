package conn

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// writer is the Conn's writing: the commands not yet written, and whether
// a caller is writing them. Conn.mu guards it, with the queue: a command's
// bytes join the buffer as its entry joins the queue, so that the order
// of the replies is the order of the entries.
type writer struct {
	buffer   []byte    // commands not yet written
	spare    []byte    // the other buffer, swapped in while one is written
	flushing bool      // a caller is writing
	deadline time.Time // the write deadline set on the socket
	// takes counts the times the buffer was taken or emptied, so that a
	// mark (see tailMark) tells bytes still buffered from written ones.
	takes uint64
	// shared is the follow-up whose bytes end the buffer, for the next
	// follow-up to share (see Conn.QueueFollowed).
	shared sharedTail
}

// take returns the buffered commands to write, and swaps in the spare
// buffer for the commands that come meanwhile.
func (w *writer) take() []byte {
	buffer := w.buffer
	w.buffer = w.spare[:0]
	w.takes++
	return buffer
}

// written takes back a buffer that take returned, once written.
func (w *writer) written(buffer []byte) {
	w.spare = buffer[:0]
}

// setDeadline sets the socket's write deadline for commands due by due,
// unless the one set already will do. A write blocks only when the
// socket's buffer is full: a deadline a little earlier than needed does
// no harm, so the one set for earlier calls stays while it is due no later
// than the calls and not before readGrace from now. That saves moving a
// timer on every write.
func (w *writer) setDeadline(netConn net.Conn, due, now time.Time) {
	deadline := socketDeadline(due, now)
	if w.deadline.After(deadline) || w.deadline.Before(now.Add(readGrace)) {
		w.deadline = deadline
		netConn.SetWriteDeadline(deadline)
	}
}

// reset drops the commands not yet written, with the link they were for.
func (w *writer) reset() {
	w.buffer = w.buffer[:0]
	w.deadline = time.Time{}
	w.takes++
}

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
	c.mu.Lock()
	buffered = c.sendLocked(call, deadline, false, time.Now())
	c.mu.Unlock()
	return buffered
}

// sendLocked is Send at time now, with c.mu held. A command that is not a
// follow-up goes in before the follow-ups still unwritten at the end of
// the buffer (see goBeforeSharedLocked).
func (c *Conn) sendLocked(call *Call, deadline time.Time, followUp bool, now time.Time) (buffered bool) {
	if deadline.IsZero() {
		deadline = now.Add(c.options.CommandTimeout)
	}
	if call.wake == nil {
		call.wake = make(chan struct{}, 1)
	}
	call.sentOn = c
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
	if c.life.link == nil && !c.life.closed && !c.options.NoDialOnSend {
		c.startDialLocked()
	}
	if c.life.closed || (c.life.link == nil && !c.life.dialing) {
		err := ErrClosed
		if !c.life.closed {
			err = c.notConnectedLocked()
			if call.Carry {
				c.carryLocked(pending{span: deadline.Sub(now), carry: true, until: call.CarryUntil, label: call.Label, command: call.Command})
			}
		}
		call.state = callIdle
		call.Err = err
		c.finishedLocked(call)
		return false
	}
	if c.pending.len() >= maxPending && c.life.link != nil {
		// A server that stopped answering while every caller gave up
		// waiting: the queue must not grow without bound.
		c.failLinkLocked(c.life.link, fmt.Errorf("%w: %d commands unanswered", os.ErrDeadlineExceeded, c.pending.len()))
		return c.sendLocked(call, deadline, followUp, now)
	}
	call.state = callQueued
	entry := pending{call: call, span: deadline.Sub(now), carry: call.Carry, until: call.CarryUntil, label: call.Label, deliver: call.Deliver}
	if call.Carry {
		c.carrier.count++
	}
	if c.life.link == nil {
		// A dial is under way: the command is written when it completes
		// (see installLocked), if that is before the deadline (see Wait).
		c.pending.push(entry)
		return true
	}
	entry.deadline = deadline
	earliest := c.pending.earliestDeadline()
	c.pending.push(entry)
	c.writer.buffer = append(c.writer.buffer, call.Command...)
	if !followUp {
		c.goBeforeSharedLocked(call)
	}
	if earliest.IsZero() || deadline.Before(earliest) {
		if c.reader.reading {
			// The reader is blocked right now: Go lets the deadline of a
			// pending Read be moved from another goroutine.
			c.reader.deadline = socketDeadline(deadline, now)
			c.life.link.netConn.SetReadDeadline(c.reader.deadline)
		}
	}
	if !c.reader.reading && !c.writer.flushing && !c.pending.ownedBefore() {
		c.readArrivedLocked(c.life.link, call, nil)
	}
	buffered = c.writer.flushing || c.pending.len() > 1 || call.followed
	if !buffered {
		c.flushLocked()
	}
	return buffered
}

// SendFollowed sends call and, behind it, follow, in one write when the
// connection is up: follow's reply tells what the server held after it ran
// call (see QueueFollowed). Each must then be given to Wait or Abandon.
func (c *Conn) SendFollowed(call, follow *Call, deadline time.Time) {
	c.QueueFollowed(call, follow, deadline)
	c.Flush()
}

// QueueFollowed is SendFollowed without its write: both commands wait in
// the write buffer until Flush, or a Wait, writes it, so that many pairs
// queued one after the other go out in one write. Follow-ups that are the
// same command and are still unwritten are written once, after the last
// call they follow: their one reply answers each of them, as it tells what
// the server held after it ran every call before it. QueueFollowed reports whether
// the connection is busy, as Send's buffered does: commands were pending
// before call, or a caller is writing.
func (c *Conn) QueueFollowed(call, follow *Call, deadline time.Time) (busy bool) {
	c.mu.Lock()
	busy = c.writer.flushing || c.pending.len() > 0
	call.followed, call.follow = true, follow
	now := time.Now() // one time for both: they are queued together
	c.sendLocked(call, deadline, false, now)
	call.followed = false
	c.shareFollowUpLocked(follow, deadline, now)
	c.mu.Unlock()
	return busy
}

// maxPending bounds the commands in flight on one connection; past it, the
// server is taken as stalled and the connection is closed.
const maxPending = 1 << 16

// Flush writes the commands left in the write buffer, unless another
// caller is writing them already.
func (c *Conn) Flush() {
	c.mu.Lock()
	if !c.writer.flushing {
		c.flushLocked()
	}
	c.mu.Unlock()
}

// flushLocked writes the buffered commands until none is left. Commands
// that other callers append while it writes go out with the next write.
func (c *Conn) flushLocked() {
	c.writer.flushing = true
	for len(c.writer.buffer) > 0 && c.life.link != nil {
		link := c.life.link
		buffer := c.writer.take()
		now := time.Now()
		c.writer.setDeadline(link.netConn, c.dueLocked(now), now)
		c.mu.Unlock()
		_, err := link.netConn.Write(buffer)
		c.mu.Lock()
		c.writer.written(buffer)
		if err != nil {
			c.failLinkLocked(link, err)
		}
	}
	c.writer.flushing = false
}
