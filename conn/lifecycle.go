package conn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

// startDialLocked starts a dial in the background unless one is running
// or the backoff after a failed dial has not passed.
func (c *Conn) startDialLocked() {
	if c.dialing || c.closed || c.link != nil || time.Now().Before(c.retryAt) {
		return
	}
	if c.address.MasterName != "" && !c.watching {
		c.watching = true
		c.background.Add(1)
		go c.watchSentinels()
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.options.DialTimeout)
	c.dialing = true
	c.dialDone = make(chan struct{})
	c.cancel = cancel
	c.background.Add(1)
	go c.dialInBackground(ctx)
}

// dialInBackground dials, performs the handshake and installs the new link.
// It is owned by the Conn, and Close waits for it.
func (c *Conn) dialInBackground(ctx context.Context) {
	defer c.background.Done()
	link, runID, err := c.dial(ctx)
	if err == nil && c.options.OnConnect != nil {
		// Before anyone waiting for the dial learns that it ended.
		c.options.OnConnect(c.name, runID)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancel()
	c.dialing = false
	close(c.dialDone)
	switch {
	case c.closed && (link == nil || c.carried == 0):
		if link != nil {
			link.netConn.Close()
		}
	case err != nil:
		c.lastErr = err
		if c.closed {
			return // Close reports the carried commands that waited for it
		}
		c.failPendingLocked(fmt.Errorf("%w: %w", ErrNotConnected, err))
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
			// The dial waited its whole timeout already: a server that is
			// stalled, not one that refuses. Dial again at once, so that
			// carried commands reach it as soon as it answers.
			c.retryAt = time.Time{}
			return
		}
		c.backoff = min(max(2*c.backoff, c.options.BackoffMin), c.options.BackoffMax)
		// Full jitter in [backoff/2, backoff) keeps clients out of step.
		half := int64(c.backoff / 2)
		c.retryAt = time.Now().Add(time.Duration(half + rand.Int64N(half+1)))
	default:
		c.installLocked(link, runID)
	}
}

// installLocked makes link the live connection and writes on it, in order,
// the commands queued while there was none: the carried commands of the
// connection before, then the commands sent during the dial. A caller
// waiting for them becomes the reader.
func (c *Conn) installLocked(link *link, runID string) {
	c.link = link
	c.connected.Store(true)
	c.fsyncAlways.Store(link.fsyncAlways)
	c.lastErr = nil
	c.backoff = 0
	c.retryAt = time.Time{}
	c.runID = runID
	now := time.Now()
	c.writeBuffer = c.writeBuffer[:0]
	c.pending.keep(func(entry *pending) bool {
		if !entry.wanted() {
			return false // abandoned before it was written: never sent
		}
		entry.deadline = now.Add(entry.span)
		c.writeBuffer = append(c.writeBuffer, entry.bytes()...)
		return true
	})
	c.flushLocked()
	if next := c.pending.firstWaiting(); next != nil {
		next.signal()
	} else if c.carried > 0 {
		c.ensureFinisherLocked()
	}
}

// Connect dials the server unless a connection is already up, and waits for
// the dial. During the backoff after a failed dial it returns the last
// error at once.
func (c *Conn) Connect(ctx context.Context) error {
	c.mu.Lock()
	for c.link == nil {
		if c.closed {
			c.mu.Unlock()
			return ErrClosed
		}
		if !c.dialing && time.Now().Before(c.retryAt) {
			err := c.lastErr
			c.mu.Unlock()
			return err
		}
		c.startDialLocked()
		done := c.dialDone
		c.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("conn: %s: %w", c.name, ctx.Err())
		}
		c.mu.Lock()
		if c.link == nil && c.lastErr != nil && !c.dialing {
			err := c.lastErr
			c.mu.Unlock()
			return err
		}
	}
	c.mu.Unlock()
	return nil
}

// notConnectedLocked describes why a call cannot be sent now.
func (c *Conn) notConnectedLocked() error {
	if c.lastErr != nil {
		return fmt.Errorf("%w: %w", ErrNotConnected, c.lastErr)
	}
	return fmt.Errorf("conn: %s: %w", c.name, ErrNotConnected)
}

// failLinkLocked closes link, if it is still the live one, and fails every
// call in flight on it with err. Carried commands stay, to be sent again on
// the next connection (see Call.Carry).
func (c *Conn) failLinkLocked(link *link, err error) {
	if c.link != link {
		return
	}
	c.link = nil
	c.connected.Store(false)
	link.netConn.Close()
	if err != ErrClosed {
		err = nodeError(c.name, err)
	}
	c.lastErr = err
	c.failPendingLocked(err)
}

// failPendingLocked fails every call in flight, or waiting for a dial,
// with err, and drops the commands not yet written; carried commands are
// kept for the next connection unless the Conn is closed or they stopped
// mattering, in which case they are listed as unfinished.
func (c *Conn) failPendingLocked(err error) {
	now := time.Now()
	c.pending.keep(func(entry *pending) bool {
		keep := entry.carry && !c.closed && now.Before(entry.until)
		if keep && entry.call != nil {
			entry.command = append(entry.command[:0], entry.call.Command...)
		}
		if entry.carry && !keep {
			c.giveUpLocked(entry, err)
		}
		if call := entry.call; call != nil {
			entry.call = nil
			call.Err = err
			call.Latency = now.Sub(call.sentAt)
			call.state = callIdle
			c.finishedLocked(call)
			if call.waiting {
				call.signal()
			}
		}
		entry.deadline = time.Time{}
		return keep
	})
	c.writeBuffer = c.writeBuffer[:0]
	c.readDeadline, c.writeDeadline = time.Time{}, time.Time{}
	if c.carried > 0 || len(c.unfinished) > 0 {
		c.ensureFinisherLocked()
	}
}
