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

// carryLocked queues a carried command that has no owner, to be written on
// the next connection, and makes sure the finisher will dial for it (or
// give it up, if its time has passed).
func (c *Conn) carryLocked(entry pending) {
	c.pending.push(entry)
	c.carried++
	c.ensureFinisherLocked()
}

// carriedDoneLocked counts a carried command answered. The finisher, if it
// waits for the command's deadline, finds it gone then: waking it now would
// cost the caller that read the reply a goroutine switch.
func (c *Conn) carriedDoneLocked() {
	c.carried--
}

// carriedDueLocked reports whether a carried command waits for a reply
// that nobody read by its deadline, or, once the Conn is closed, for any
// reply: the finisher must read it.
func (c *Conn) carriedDueLocked() bool {
	if c.carried == 0 {
		return false
	}
	due := c.pending.earliestCarried()
	return c.closed || (!due.IsZero() && !time.Now().Before(due))
}

// ensureFinisherLocked starts the finisher on first use, and wakes it. It
// then stays, parked when it has nothing to do, until the Conn is closed:
// a goroutine started for every carried command would cost more than the
// command.
func (c *Conn) ensureFinisherLocked() {
	if c.finishing {
		c.wakeFinisherLocked()
		return
	}
	if c.closed && c.link == nil && c.carried == 0 && len(c.unfinished) == 0 {
		return
	}
	c.finishing = true
	c.background.Add(1)
	go c.finish()
}

func (c *Conn) wakeFinisherLocked() {
	select {
	case c.finishWake <- struct{}{}:
	default:
	}
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
		c.finisherDue = time.Time{}
		if c.closed && (c.carried == 0 || c.link == nil) {
			break // Close reports what is left
		}
		if unfinished := c.takeUnfinishedLocked(); len(unfinished) > 0 {
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
			c.finisherDue = due
			timer.Reset(time.Until(due))
			wait = timer.C
		}
		closing := c.closing
		if c.closed {
			closing = nil // closed already: wait for the work itself
		}
		switch {
		case c.carried == 0:
			// Nothing to finish: park until woken.
		case c.link == nil && c.dialing:
			done := c.dialDone
			c.mu.Unlock()
			select {
			case <-done:
			case <-closing:
			}
			c.mu.Lock()
			continue
		case c.link == nil:
			c.dropExpiredLocked()
			if c.carried == 0 {
				continue
			}
			if time.Now().Before(c.retryAt) {
				sleepUntil(c.retryAt)
				break
			}
			c.startDialLocked()
			continue
		case c.reading || c.flushing:
			// Another caller reads or writes, and reads the carried
			// replies on the way: look again at their deadline.
			sleepUntil(c.pending.earliestCarried())
		case !c.carriedDueLocked():
			sleepUntil(c.pending.earliestCarried())
		default:
			if len(c.writeBuffer) > 0 {
				c.flushLocked()
				continue
			}
			c.readLocked(readerFinisher, nil)
			continue
		}
		c.mu.Unlock()
		select {
		case <-c.finishWake:
		case <-closing:
		case <-wait:
		}
		c.mu.Lock()
	}
	c.finishing = false
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
		c.giveUpLocked(entry, fmt.Errorf("%w: not connected again before the command stopped mattering", c.notConnectedLocked()))
		return false
	})
}

// giveUpLocked counts a carried command, about to leave the queue, as
// unfinished, for the report.
func (c *Conn) giveUpLocked(entry *pending, err error) {
	c.carried--
	c.unfinished = append(c.unfinished, Unfinished{Label: entry.label, Err: err})
}

// takeUnfinishedLocked returns the unfinished commands not yet reported.
func (c *Conn) takeUnfinishedLocked() []Unfinished {
	unfinished := c.unfinished
	c.unfinished = nil
	return unfinished
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
