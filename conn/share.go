package conn

import (
	"bytes"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// A vote's follow-up (QueueFollowed) reads the server after the vote. When
// callers queue followed votes on a connection faster than it writes them,
// the same follow-up command comes many times in one write, and one read
// after the last vote is after every vote before it. So the follow-ups
// still unwritten at the end of the write buffer form a run: their command
// is written once, at the end, and any command sent meanwhile goes in
// before it; a follow-up equal to the run's joins it without its bytes.
// The run's one reply is delivered to each of its follow-ups. They are
// queue entries, each but the last marked sharesNext, each with its own
// owner and deadline: a timeout, a failed link, Close or an abandon treats
// each as any other entry.

// tailMark is where the write buffer and the queue stood at one moment:
// a later mark that equals it, moved by one entry and its bytes, shows
// that nothing else happened to either in between.
type tailMark struct {
	takes  uint64 // writer.takes
	length int    // len(writer.buffer)
	pushed uint64 // queue.pushed
	kept   uint64 // queue.kept
}

// after returns the mark that one more entry, with size bytes written to
// the buffer, makes of m.
func (m tailMark) after(size int) tailMark {
	m.length += size
	m.pushed++
	return m
}

// sharedTail is the run of follow-ups whose command ends the write
// buffer, unwritten. It holds while the buffer and the queue are as mark
// says.
type sharedTail struct {
	mark    tailMark
	first   uint64 // the queue push that holds the run's first entry; 0: no run
	command []byte // the run's command, kept to write it again
}

// markLocked returns where the write buffer and the queue stand.
func (c *Conn) markLocked() tailMark {
	return tailMark{takes: c.writer.takes, length: len(c.writer.buffer), pushed: c.pending.pushed, kept: c.pending.kept}
}

// runLocked returns the length of the run of follow-ups whose command
// ends the buffer, if the buffer and the queue now stand as want says; 0
// when there is no such run.
func (c *Conn) runLocked(want tailMark) int {
	tail := &c.writer.shared
	if tail.first == 0 || c.markLocked() != want {
		return 0
	}
	length := tail.mark.pushed - tail.first + 1
	if length+want.pushed-tail.mark.pushed > uint64(c.pending.len()) {
		return 0 // a reply was taken for an unwritten entry: a hostile server
	}
	return int(length)
}

// goBeforeSharedLocked moves call, just queued and appended to the buffer,
// in before the run of follow-ups that ended them, in the buffer as in
// the queue: the run's reply then still comes after every call it follows.
func (c *Conn) goBeforeSharedLocked(call *Call) {
	tail := &c.writer.shared
	run := c.runLocked(tail.mark.after(len(call.Command)))
	if run == 0 {
		return
	}
	start := tail.mark.length - len(tail.command)
	c.writer.buffer = append(append(c.writer.buffer[:start], call.Command...), tail.command...)
	last := c.pending.len() - 1
	c.pending.exchange(last-run, last)
	if run > 1 {
		c.pending.at(last - 1).sharesNext = true
	}
	c.pending.at(last).sharesNext = false
	tail.mark, tail.first = c.markLocked(), tail.first+1
}

// shareFollowUpLocked queues follow, a follow-up sent at time now: into the
// run that ends the buffer when it is the same command, or else as a new
// run.
func (c *Conn) shareFollowUpLocked(follow *Call, deadline, now time.Time) {
	tail := &c.writer.shared
	before := c.markLocked()
	joins := c.runLocked(tail.mark) > 0 && bytes.Equal(tail.command, follow.Command)
	c.sendLocked(follow, deadline, true, now) // buffered: a call is pending before it
	if follow.state != callQueued || follow.Carry || follow.Deliver || c.life.link == nil ||
		c.markLocked() != before.after(len(follow.Command)) {
		tail.first = 0
		return
	}
	if joins {
		c.writer.buffer = c.writer.buffer[:before.length] // the run's bytes serve it
		c.pending.at(c.pending.len() - 2).sharesNext = true
		tail.mark = c.markLocked()
		return
	}
	tail.mark, tail.first = c.markLocked(), c.pending.pushed
	tail.command = append(tail.command[:0], follow.Command...)
}

// takeRunLocked delivers value to the follow-ups that share the reply of
// entry, which was just given it. A NOSCRIPT reply is handled once for the
// run (see deliverLocked): the follow-ups after the first delivered take
// it as their reply.
func (c *Conn) takeRunLocked(entry pending, value resp.Value) {
	delivered := entry.call != nil
	for entry.sharesNext {
		next, ok := c.pending.pop()
		if !ok {
			return
		}
		entry = next
		if entry.call != nil {
			entry.call.retried = entry.call.retried || delivered
			c.deliverLocked(entry, value)
			delivered = true
		}
	}
}
