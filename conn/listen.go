package conn

import (
	"context"

	"github.com/lockmux/lockmux/resp"
)

// A connection that carries subscriptions: push commands are written with
// SendPush, and Listen reads what the server pushes.

// SendPush writes a command whose answer comes as RESP3 push frames, not as
// a reply (SUBSCRIBE, UNSUBSCRIBE): the answers go to Options.OnPush. It
// reports false, and sends nothing, when the connection is down or does
// not speak RESP3; a pub/sub command on a RESP2 connection would take it
// over.
func (c *Conn) SendPush(command []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.link == nil || c.link.protocol != ProtocolRESP3 {
		return false
	}
	c.writeBuffer = append(c.writeBuffer, command...)
	if !c.flushing {
		c.flushLocked()
	}
	return true
}

// Listen reads the connection until ctx ends or the connection fails,
// handing RESP3 pushes to Options.OnPush and replies to their calls: it
// serves a connection that carries subscriptions, where messages arrive
// without a command to wait for. It returns the error that ended it:
// ctx's error when ctx ended. Listen needs a live connection (see
// Connect). When a caller is reading it for its own reply, Listen takes
// over once that caller's turn ends.
//
// A server that refuses a push command (SendPush), such as a SUBSCRIBE to
// a channel an ACL denies (NOPERM), answers with an error reply instead of
// a push: an error reply that arrives while no call is pending goes to
// refused, when not nil, and the connection stays up. Any other reply that
// no command asked for closes the connection (R13). refused is called on
// Listen's goroutine with a value valid only during the call; it must not
// block or call back into the Conn.
func (c *Conn) Listen(ctx context.Context, refused func(resp.Value)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.reading && !c.closed && c.link != nil {
		if c.listenerTurn == nil {
			c.listenerTurn = make(chan struct{})
		}
		turn := c.listenerTurn
		c.mu.Unlock()
		select {
		case <-turn:
		case <-ctx.Done():
		}
		c.mu.Lock()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	switch {
	case c.closed:
		return ErrClosed
	case c.link == nil:
		return c.notConnectedLocked()
	}
	done := ctx.Done()
	stop := context.AfterFunc(ctx, func() { c.interruptReader(done) })
	defer stop()
	c.refused, c.readerDone = refused, done
	err := c.readLocked(readerListener, nil)
	c.refused, c.readerDone = nil, nil
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
