package conn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// lifecycle is the life of the Conn's link: the live link, the dial that
// makes the next one, the backoff after a dial that failed, and the
// Conn's close. Conn.mu guards its fields, but for the atomic mirrors,
// which callers read without it, and closing, which is set by New.
type lifecycle struct {
	link     *link              // the live connection, nil when there is none
	closed   bool               // Close was called
	closing  chan struct{}      // closed by Close: ends the background waits
	dialing  bool               // a dial runs in the background
	dialDone chan struct{}      // closed when the dial in progress ends
	cancel   context.CancelFunc // cancels the dial in progress
	lastErr  error              // why the last connection or dial failed
	retryAt  time.Time          // no new dial before this time
	backoff  time.Duration      // the last backoff, doubled on each failure
	runID    string             // the server's run_id at the last handshake

	connected   atomic.Bool // mirrors link != nil
	fsyncAlways atomic.Bool // mirrors the live link's fsyncAlways (see FsyncAlways)
}

// link is one established network connection with its reply reader.
// The writer writes netConn, and the reader reads reader, outside Conn.mu
// in their turns; Conn.mu guards pushes and refusal.
type link struct {
	netConn  net.Conn
	reader   *resp.Reader
	protocol Protocol
	received *receivedProbe // nil where the socket cannot be asked
	address  string         // the server's "host:port" or path, as dialled
	// fsyncAlways is set when the handshake, asked to (AskPersistence),
	// found appendfsync always.
	fsyncAlways bool
	// pushes are the push commands whose answers are still to come, and
	// refusal the text of the first refusal read while nobody listened.
	pushes  pushCommands
	refusal []byte
}

// mayDial reports whether a dial may start now: none runs, the Conn is
// open, no link is up, and the backoff has passed.
func (l *lifecycle) mayDial(now time.Time) bool {
	return !l.dialing && !l.closed && l.link == nil && !now.Before(l.retryAt)
}

// backingOff reports whether no dial runs and the backoff after a failed
// one has not passed.
func (l *lifecycle) backingOff(now time.Time) bool {
	return !l.dialing && now.Before(l.retryAt)
}

// retryAfter sets when the next dial may start after one that failed with
// err. A dial that timed out waited its whole timeout already: a server
// that is stalled, not one that refuses. The next dial may start at once,
// so that carried commands reach it as soon as it answers. Otherwise the
// backoff doubles, between min and max, with full jitter in [backoff/2,
// backoff) to keep clients out of step.
func (l *lifecycle) retryAfter(err error, backoffMin, backoffMax time.Duration) {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		l.retryAt = time.Time{}
		return
	}
	l.backoff = min(max(2*l.backoff, backoffMin), backoffMax)
	half := int64(l.backoff / 2)
	l.retryAt = time.Now().Add(time.Duration(half + rand.Int64N(half+1)))
}

// installed makes link the live one, after a handshake that reported
// runID, and forgets the failures before it.
func (l *lifecycle) installed(link *link, runID string) {
	l.link = link
	l.connected.Store(true)
	l.fsyncAlways.Store(link.fsyncAlways)
	l.lastErr = nil
	l.backoff = 0
	l.retryAt = time.Time{}
	l.runID = runID
}

// dropped closes link and forgets it, if it is still the live one, and
// reports whether it was.
func (l *lifecycle) dropped(link *link) bool {
	if l.link != link {
		return false
	}
	l.link = nil
	l.connected.Store(false)
	link.netConn.Close()
	return true
}

// startDialLocked starts a dial in the background unless one is running
// or the backoff after a failed dial has not passed.
func (c *Conn) startDialLocked() {
	if !c.life.mayDial(time.Now()) {
		return
	}
	if c.address.MasterName != "" && c.sentinel.start() {
		c.background.Add(1)
		go c.watchSentinels()
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.options.DialTimeout)
	c.life.dialing = true
	c.life.dialDone = make(chan struct{})
	c.life.cancel = cancel
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
	c.life.cancel()
	c.life.dialing = false
	close(c.life.dialDone)
	switch {
	case c.life.closed && (link == nil || c.carrier.count == 0):
		if link != nil {
			link.netConn.Close()
		}
	case err != nil:
		c.life.lastErr = err
		if c.life.closed {
			return // Close reports the carried commands that waited for it
		}
		c.failPendingLocked(fmt.Errorf("%w: %w", ErrNotConnected, err))
		c.life.retryAfter(err, c.options.BackoffMin, c.options.BackoffMax)
	default:
		c.installLocked(link, runID)
	}
}

// installLocked makes link the live connection and writes on it, in order,
// the commands queued while there was none: the carried commands of the
// connection before, then the commands sent during the dial. A caller
// waiting for them becomes the reader.
func (c *Conn) installLocked(link *link, runID string) {
	c.life.installed(link, runID)
	now := time.Now()
	c.writer.reset()
	c.pending.keep(func(entry *pending) bool {
		if !entry.wanted() {
			return false // abandoned before it was written: never sent
		}
		entry.deadline = now.Add(entry.span)
		entry.sharesNext = false // each has its bytes written
		c.writer.buffer = append(c.writer.buffer, entry.bytes()...)
		return true
	})
	c.flushLocked()
	if next := c.pending.firstWaiting(); next != nil {
		next.signal()
	} else if c.carrier.count > 0 {
		c.ensureFinisherLocked()
	}
}

// Connect dials the server unless a connection is already up, and waits for
// the dial. During the backoff after a failed dial it returns the last
// error at once.
func (c *Conn) Connect(ctx context.Context) error {
	c.mu.Lock()
	for c.life.link == nil {
		if c.life.closed {
			c.mu.Unlock()
			return ErrClosed
		}
		if c.life.backingOff(time.Now()) {
			err := c.life.lastErr
			c.mu.Unlock()
			return err
		}
		c.startDialLocked()
		done := c.life.dialDone
		c.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("conn: %s: %w", c.name, ctx.Err())
		}
		c.mu.Lock()
		if c.life.link == nil && c.life.lastErr != nil && !c.life.dialing {
			err := c.life.lastErr
			c.mu.Unlock()
			return err
		}
	}
	c.mu.Unlock()
	return nil
}

// notConnectedLocked describes why a call cannot be sent now.
func (c *Conn) notConnectedLocked() error {
	if c.life.lastErr != nil {
		return fmt.Errorf("%w: %w", ErrNotConnected, c.life.lastErr)
	}
	return fmt.Errorf("conn: %s: %w", c.name, ErrNotConnected)
}

// failLinkLocked closes link, if it is still the live one, and fails every
// call in flight on it with err. Carried commands stay, to be sent again on
// the next connection (see Call.Carry).
func (c *Conn) failLinkLocked(link *link, err error) {
	if !c.life.dropped(link) {
		return
	}
	if err != ErrClosed {
		err = nodeError(c.name, err)
	}
	c.life.lastErr = err
	c.failPendingLocked(err)
}

// failPendingLocked fails every call in flight, or waiting for a dial,
// with err, and drops the commands not yet written; carried commands are
// kept for the next connection unless the Conn is closed or they stopped
// mattering, in which case they are listed as unfinished.
func (c *Conn) failPendingLocked(err error) {
	now := time.Now()
	c.pending.keep(func(entry *pending) bool {
		keep := entry.carry && !c.life.closed && now.Before(entry.until)
		if keep && entry.call != nil {
			entry.command = append(entry.command[:0], entry.call.Command...)
		}
		if entry.carry && !keep {
			c.carrier.giveUp(entry, err)
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
	c.writer.reset()
	c.reader.deadline = time.Time{}
	if c.carrier.count > 0 || len(c.carrier.unfinished) > 0 {
		c.ensureFinisherLocked()
	}
}
