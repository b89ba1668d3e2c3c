package conn

import (
	"fmt"
	"time"
)

// Unfinished describes a carried command (Call.Carry) that the Conn gave
// up on: its connection failed and CarryUntil passed before it could be
// sent again, or the Conn was closed before the server answered it. The
// command may or may not have taken effect.
type Unfinished struct {
	// Label is the call's Label.
	Label string
	// Err is why the command could not be finished.
	Err error
}

// carrier keeps the count of the carried commands (Call.Carry) in the
// queue and runs their finisher. Conn.mu guards it, with the queue: count
// changes as carried entries join and leave it.
type carrier struct {
	count      int           // carried entries in the queue
	finishing  bool          // the finisher goroutine runs
	due        time.Time     // when the finisher looks next; zero: when woken
	wake       chan struct{} // wakes the finisher; buffered, made by New
	unfinished []Unfinished  // given up and not yet reported, to be reported outside mu
}

// answered counts a carried command answered. The finisher, if it waits
// for the command's deadline, finds it gone then: waking it now would
// cost the caller that read the reply a goroutine switch.
func (cr *carrier) answered() {
	cr.count--
}

// giveUp counts a carried command, about to leave the queue, as
// unfinished, for the report.
func (cr *carrier) giveUp(entry *pending, err error) {
	cr.count--
	cr.unfinished = append(cr.unfinished, Unfinished{Label: entry.label, Err: err})
}

// takeUnfinished returns the unfinished commands not yet reported.
func (cr *carrier) takeUnfinished() []Unfinished {
	unfinished := cr.unfinished
	cr.unfinished = nil
	return unfinished
}

// wakeFinisher wakes the finisher, if it is parked.
func (cr *carrier) wakeFinisher() {
	select {
	case cr.wake <- struct{}{}:
	default:
	}
}

// carryLocked queues a carried command that has no owner, to be written on
// the next connection, and makes sure the finisher will dial for it (or
// give it up, if its time has passed).
func (c *Conn) carryLocked(entry pending) {
	c.pending.push(entry)
	c.carrier.count++
	c.ensureFinisherLocked()
}

// carriedDueLocked reports whether a carried command waits for a reply
// that nobody read by its deadline, or, once the Conn is closed, for any
// reply: the finisher must read it.
func (c *Conn) carriedDueLocked() bool {
	if c.carrier.count == 0 {
		return false
	}
	due := c.pending.earliestCarried()
	return c.life.closed || (!due.IsZero() && !time.Now().Before(due))
}

// ensureFinisherLocked starts the finisher on first use, and wakes it. It
// then stays, parked when it has nothing to do, until the Conn is closed:
// a goroutine started for every carried command would cost more than the
// command.
func (c *Conn) ensureFinisherLocked() {
	if c.carrier.finishing {
		c.carrier.wakeFinisher()
		return
	}
	if c.life.closed && c.life.link == nil && c.carrier.count == 0 && len(c.carrier.unfinished) == 0 {
		return
	}
	c.carrier.finishing = true
	c.background.Add(1)
	go c.finish()
}

// finish is the finisher: the goroutine that carries the carried commands
// to completion when nobody else does. A carried command takes effect when
// the server reads it, not when its reply is read: the finisher needs to
// read a reply only when nobody else did by the command's deadline, to
// tell a server that answers from one that does not. So it sleeps until
// the earliest deadline of the carried commands, and the callers that use
// the connection meanwhile read their replies on the way, with no
// goroutine switch. At the deadline it reads what is left: a reply that
// arrived, or the timeout that fails the connection. It dials again when
// the connection failed, sends the carried commands again first, and drops
// those whose time has passed. It reports what could not be finished. Once
// the Conn is closed it reads at once, and ends when no carried command is
// pending or there is no connection left to finish them on. It is owned by
// the Conn, and Close waits for it.
func (c *Conn) finish() {
	defer c.background.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	c.mu.Lock()
	for {
		c.carrier.due = time.Time{}
		if c.life.closed && (c.carrier.count == 0 || c.life.link == nil) {
			break // Close reports what is left
		}
		if unfinished := c.carrier.takeUnfinished(); len(unfinished) > 0 {
			c.mu.Unlock()
			c.report(unfinished)
			c.mu.Lock()
			continue
		}
		var wait <-chan time.Time
		sleepUntil := func(due time.Time) {
			if due.IsZero() {
				return // until woken
			}
			// Never less than the read grace: a reader that is busy past a
			// deadline is looked at again, not spun on.
			if soonest := time.Now().Add(readGrace); due.Before(soonest) {
				due = soonest
			}
			c.carrier.due = due
			timer.Reset(time.Until(due))
			wait = timer.C
		}
		closing := c.life.closing
		if c.life.closed {
			closing = nil // closed already: wait for the work itself
		}
		switch {
		case c.carrier.count == 0:
			// Nothing to finish: park until woken.
		case c.life.link == nil && c.life.dialing:
			done := c.life.dialDone
			c.mu.Unlock()
			select {
			case <-done:
			case <-closing:
			}
			c.mu.Lock()
			continue
		case c.life.link == nil:
			c.dropExpiredLocked()
			if c.carrier.count == 0 {
				continue
			}
			if time.Now().Before(c.life.retryAt) {
				sleepUntil(c.life.retryAt)
				break
			}
			c.startDialLocked()
			continue
		case c.reader.reading || c.writer.flushing:
			// Another caller reads or writes, and reads the carried
			// replies on the way: look again at their deadline.
			sleepUntil(c.pending.earliestCarried())
		case !c.carriedDueLocked():
			sleepUntil(c.pending.earliestCarried())
		default:
			if len(c.writer.buffer) > 0 {
				c.flushLocked()
				continue
			}
			c.readLocked(readerFinisher, nil)
			continue
		}
		c.mu.Unlock()
		select {
		case <-c.carrier.wake:
		case <-closing:
		case <-wait:
		}
		c.mu.Lock()
	}
	c.carrier.finishing = false
	c.mu.Unlock()
}

// dropExpiredLocked forgets the carried commands, waiting for a connection,
// whose time has passed, and lists them as unfinished.
func (c *Conn) dropExpiredLocked() {
	now := time.Now()
	c.pending.keep(func(entry *pending) bool {
		if entry.call != nil || !entry.carry || now.Before(entry.until) {
			return true
		}
		c.carrier.giveUp(entry, fmt.Errorf("%w: not connected again before the command stopped mattering", c.notConnectedLocked()))
		return false
	})
}

// report tells Options.OnUnfinished of the unfinished commands, and returns
// an error matching ErrUnfinished when there are any.
func (c *Conn) report(unfinished []Unfinished) error {
	if len(unfinished) == 0 {
		return nil
	}
	if onUnfinished := c.options.OnUnfinished; onUnfinished != nil {
		for _, u := range unfinished {
			onUnfinished(c.name, u)
		}
	}
	return fmt.Errorf("conn: %s: %w: %d carried commands, the first: %s: %w", c.name, ErrUnfinished, len(unfinished), unfinished[0].Label, unfinished[0].Err)
}
