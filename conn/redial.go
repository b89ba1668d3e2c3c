package conn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// startDialLocked starts a dial in the background unless one is running
// or the backoff after a failed dial has not passed.
func (c *Conn) startDialLocked() {
	if c.dialing || c.closed || c.link != nil || time.Now().Before(c.retryAt) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.options.DialTimeout)
	c.dialing = true
	c.dialDone = make(chan struct{})
	c.cancel = cancel
	c.dialers.Add(1)
	go c.dialInBackground(ctx)
}

// dialInBackground dials, performs the handshake and installs the new link.
// It is owned by the Conn, and Close waits for it.
func (c *Conn) dialInBackground(ctx context.Context) {
	defer c.dialers.Done()
	link, runID, err := c.dial(ctx)
	if err == nil && c.options.OnConnect != nil {
		// Before anyone waiting for the dial learns that it ended.
		c.options.OnConnect(c.name, runID)
	}
	c.mu.Lock()
	c.cancel()
	c.dialing = false
	close(c.dialDone)
	switch {
	case c.closed:
		if link != nil {
			link.netConn.Close()
		}
	case err != nil:
		c.lastErr = err
		c.failPendingLocked(fmt.Errorf("%w: %w", ErrNotConnected, err))
		c.backoff = min(max(2*c.backoff, c.options.BackoffMin), c.options.BackoffMax)
		// Full jitter in [backoff/2, backoff) keeps clients out of step.
		half := int64(c.backoff / 2)
		c.retryAt = time.Now().Add(time.Duration(half + rand.Int64N(half+1)))
	default:
		c.link = link
		c.connected.Store(true)
		c.lastErr = nil
		c.backoff = 0
		c.retryAt = time.Time{}
		c.runID = runID
		// Commands sent during the dial go out now; a caller waiting for
		// them becomes the reader.
		c.flushLocked()
		if next := c.pending.firstWaiting(); next != nil {
			next.signal()
		}
	}
	c.mu.Unlock()
}
