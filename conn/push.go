package conn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// ListenPush is Listen for a connection that carries commands whose
// answers are push frames (see SendPush), such as a subscription
// connection. It differs from Listen in one way. A server that refuses
// such a command, for example a SUBSCRIBE to a channel that an ACL denies
// the user (NOPERM), answers with an error reply instead of a push; an
// error reply that arrives while no call is pending is that refusal, not a
// reply that no command asked for: it goes to refused, and the connection
// stays up. Any other reply that no command asked for still closes the
// connection (RELIABILITY.md R13), and a reply to a call goes to the call.
//
// refused is called on the goroutine of ListenPush with a value that is
// valid only during the call; it must not block or call back into the
// Conn. ListenPush returns what Listen returns.
func (c *Conn) ListenPush(ctx context.Context, refused func(resp.Value)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return ErrClosed
	case c.link == nil:
		return c.notConnectedLocked()
	case c.reading:
		return fmt.Errorf("conn: %s: %w: another caller is reading", c.name, ErrUnexpectedReply)
	}
	link := c.link
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.link == link && c.reading {
			c.interrupted = true
			c.readDeadline = time.Unix(1, 0)
			link.netConn.SetReadDeadline(c.readDeadline)
		}
	})
	defer stop()
	err := c.readPushesLocked(link, refused)
	c.interrupted = false
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// readPushesLocked is readLocked for a listener, with refusals of push
// commands handed to refused: it reads until ListenPush's context
// interrupts it or the link fails, and returns the error that ended it.
func (c *Conn) readPushesLocked(link *link, refused func(resp.Value)) error {
	c.reading = true
	defer c.handOffReadingLocked()
	for link == c.link {
		if c.interrupted {
			// The context ended while a frame was being handled.
			c.interrupted = false
			return context.Canceled
		}
		// With no call pending, wait as long as it takes.
		var deadline time.Time
		if earliest := c.earliestLocked(); !earliest.IsZero() {
			deadline = socketDeadline(earliest, time.Now())
		}
		if !deadline.Equal(c.readDeadline) {
			c.readDeadline = deadline
			link.netConn.SetReadDeadline(deadline)
		}
		c.mu.Unlock()
		value, err := link.reader.ReadReply()
		c.mu.Lock()
		switch {
		case link != c.link:
			return ErrNotConnected // the link failed meanwhile and its calls were failed
		case err != nil:
			if c.interrupted && errors.Is(err, os.ErrDeadlineExceeded) && c.pending.len() == 0 {
				// The context ended; the bytes read so far stay buffered
				// for the next reader.
				c.interrupted = false
				return context.Canceled
			}
			c.failLinkLocked(link, err)
			return err
		case value.Type == resp.TypePush:
			if err := c.takePushLocked(link, value); err != nil {
				return err
			}
		case value.IsError() && c.pending.len() == 0 && refused != nil:
			c.mu.Unlock()
			refused(value)
			c.mu.Lock()
		default:
			if err := c.takeReplyLocked(link, value); err != nil {
				return err
			}
		}
	}
	return ErrNotConnected
}
