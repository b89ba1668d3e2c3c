package conn

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// reader is the Conn's reading turn: whether a caller reads, whose
// context may interrupt it, Listen's handler, and the Listen that waits
// for the turn. Conn.mu guards it, with the queue: the reader takes each
// reply for the oldest entry, and hands its turn to the oldest caller
// that waits (see handOffReadingLocked).
type reader struct {
	reading  bool      // a caller is reading
	deadline time.Time // the read deadline set on the socket
	// done is the Done channel of the reader's context, if any: once it
	// is closed, a timeout is not the server's.
	done  <-chan struct{}
	watch doneWatch // the registration that interrupts the reader
	// refused is Listen's handler of refused push commands, while it
	// listens, and listenerTurn is closed when a reader's turn ends, while
	// a Listen waits for it.
	refused      func(resp.Value)
	listenerTurn chan struct{}
}

// setDeadline sets the socket's read deadline, unless it is set already.
func (r *reader) setDeadline(netConn net.Conn, deadline time.Time) {
	if !deadline.Equal(r.deadline) {
		r.deadline = deadline
		netConn.SetReadDeadline(deadline)
	}
}

// endTurn ends a reader's turn, and lets a Listen that waits for it go.
func (r *reader) endTurn() {
	r.reading = false
	if r.listenerTurn != nil {
		close(r.listenerTurn)
		r.listenerTurn = nil
	}
}

// readerRole says whom a reader reads for, and so when it stops.
type readerRole uint8

const (
	// readerCaller reads for its own call, and stops once that is done
	// and the bytes already read serve nobody else.
	readerCaller readerRole = iota
	// readerListener reads until Listen's context ends or the link fails.
	readerListener
	// readerFinisher reads until no carried command is due (see
	// Conn.carriedDueLocked).
	readerFinisher
)

// errInterrupted ends a reading turn whose context ended.
var errInterrupted = errors.New("conn: reading interrupted")

// readLocked makes the caller the reader: it reads replies and delivers
// them to their calls until its role is done (see readerRole), then passes
// the reading to a caller that is waiting. It returns the error that ended
// it: errInterrupted when the reader's context ended.
func (c *Conn) readLocked(role readerRole, own *Call) error {
	c.reader.reading = true
	defer c.handOffReadingLocked()
	link := c.life.link
	// now is refreshed before a read that may wait for the network: a
	// frame already buffered is read at once, and the time taken before
	// the frames of the same batch serves its deadline. A stale now only
	// brings the socket's deadline earlier, and a read it times out looks
	// at the time again before anything is failed.
	var now time.Time
	for link != nil {
		if isDone(c.reader.done) {
			// The reader's context ended while a frame was being handled,
			// or before its interruption could find it reading.
			return errInterrupted
		}
		if role == readerFinisher && !c.carriedDueLocked() {
			return nil
		}
		// The caller leaves once its own reply is in, unless buffered bytes
		// can serve callers still waiting, or belong to no command at all
		// and must be looked at (a push, or an unsolicited reply that
		// closes the connection) before they are taken for the next reply.
		// It looks after a push as after a reply: a push that came with its
		// reply must not keep it reading for frames that nobody awaits.
		if role == readerCaller && own.state != callQueued &&
			(link.reader.Buffered() == 0 || (c.pending.len() > 0 && c.pending.firstWaiting() == nil)) {
			return nil
		}
		// A listener with no call pending waits as long as it takes; any
		// other reader waits until the earliest needed reply is due.
		var deadline time.Time
		if role != readerListener || !c.earliestLocked().IsZero() {
			if now.IsZero() || link.reader.Buffered() == 0 {
				now = time.Now()
			}
			deadline = socketDeadline(c.dueLocked(now), now)
		}
		c.reader.setDeadline(link.netConn, deadline)
		c.mu.Unlock()
		value, err := link.reader.ReadReply()
		c.mu.Lock()
		if link != c.life.link {
			return ErrNotConnected // the link failed meanwhile and its calls were failed
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if isDone(c.reader.done) {
					// Interrupted (see interruptReader): the bytes read so
					// far stay buffered for the next reader.
					return errInterrupted
				}
				if now = time.Now(); !c.overdueLocked(now) {
					// The call that set the deadline was answered or
					// abandoned meanwhile, or the deadline came from a
					// stale now: nobody needed that reply yet.
					continue
				}
			}
			c.failLinkLocked(link, err)
			return err
		}
		if value.Type == resp.TypePush {
			if err := c.takePushLocked(link, value); err != nil {
				return err
			}
			continue
		}
		if link.pushes.answersNext() || (role == readerListener && value.IsError() && c.pending.len() == 0) {
			if err := c.takeRefusalLocked(link, value); err != nil {
				return err
			}
			continue
		}
		if err := c.takeReplyLocked(link, value); err != nil {
			return err
		}
	}
	return ErrNotConnected
}

// isDone reports whether done is closed; a nil channel never is.
func isDone(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// overdueLocked reports whether a needed reply is late by more than the
// read grace: only then has the server, not a caller, run out of time.
func (c *Conn) overdueLocked(now time.Time) bool {
	earliest := c.earliestLocked()
	return !earliest.IsZero() && !now.Before(earliest.Add(readGrace))
}

// earliestLocked returns the earliest deadline of the written calls that
// somebody needs (see pending.needed); the zero time when there is none.
func (c *Conn) earliestLocked() time.Time {
	return c.pending.earliestDeadline()
}

// dueLocked returns when the socket must have served the pending calls:
// their earliest deadline, or CommandTimeout from now when only commands
// that nobody waits for are pending.
func (c *Conn) dueLocked(now time.Time) time.Time {
	if earliest := c.earliestLocked(); !earliest.IsZero() {
		return earliest
	}
	return now.Add(c.options.CommandTimeout)
}

// readArrivedLocked reads the frames that have begun to arrive on a
// connection that nobody else reads, and gives replies to their commands
// and pushes to Options.OnPush. It waits for the rest of a frame that has
// begun, never for a frame that has not.
//
// Send calls it, with the new call as unsent, when nothing ahead of that
// call has an owner: nothing has been read since the connection went idle,
// or since its last callers stopped waiting (a round decided before every
// server answered). The replies of the abandoned commands are dropped, and
// any other frame is a reply that no command asked for (R13): it fails the
// connection instead of being taken for the answer to the command about to
// be written. Bytes that come between this look and the write cannot be
// told from the reply.
//
// Collect calls it with until set: it stops once that call is answered.
//
// It costs one non-blocking system call when nothing has arrived.
func (c *Conn) readArrivedLocked(link *link, unsent, until *Call) {
	arrived := func() bool { return link.reader.Buffered() > 0 || link.received.received() > 0 }
	if !arrived() {
		return
	}
	c.writer.flushing, c.reader.reading = true, true // nothing is written while it reads
	defer func() { c.writer.flushing = false; c.handOffReadingLocked() }()
	for c.life.link == link && (until == nil || until.state == callQueued) && arrived() {
		// A frame whose first bytes are here may still be arriving (a long
		// reply comes in several segments): wait for the rest as any
		// reader would, until the pending calls are due.
		now := time.Now()
		c.reader.setDeadline(link.netConn, socketDeadline(c.dueLocked(now), now))
		c.mu.Unlock()
		value, err := link.reader.ReadReply()
		c.mu.Lock()
		switch {
		case link != c.life.link:
			return
		case err != nil:
			c.failLinkLocked(link, err)
			return
		case value.Type == resp.TypePush:
			if c.takePushLocked(link, value) != nil {
				return
			}
		case link.pushes.answersNext():
			if c.takeRefusalLocked(link, value) != nil {
				return
			}
		case unsent != nil && c.pending.at(0).call == unsent:
			c.failLinkLocked(link, fmt.Errorf("%w: a reply arrived while no command was pending", ErrUnexpectedReply))
			return
		default:
			if c.takeReplyLocked(link, value) != nil {
				return
			}
		}
	}
}

// Collect takes the call's reply if it has begun to arrive, without
// waiting for one that has not: it reads the frames received so far, for
// whichever calls they answer, and reports whether the call is done. It
// reports false at once when another caller is reading or writing the
// connection, or when nothing has arrived. A caller that no longer needs a reply collects what
// is there before it abandons the rest (see mux.Group.Discard), so that
// replies do not pile up on a connection that nobody waits on.
func (c *Conn) Collect(call *Call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case call.state != callQueued:
		return true
	case c.reader.reading || c.writer.flushing || c.life.link == nil || len(c.writer.buffer) > 0:
		return false
	}
	c.readArrivedLocked(c.life.link, nil, call)
	return call.state != callQueued
}

// handOffReadingLocked ends a reader's turn and wakes a caller that waits
// for its reply, which becomes the next reader. Carried commands left
// pending are the finisher's, when they are due (see finish).
func (c *Conn) handOffReadingLocked() {
	c.reader.endTurn()
	if next := c.pending.firstWaiting(); next != nil {
		next.signal()
	}
}
