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
	if c.life.closed || c.life.link == nil || c.life.link.protocol != ProtocolRESP3 {
		return false
	}
	c.life.link.pushes.written(command, c.pending.len())
	c.writer.buffer = append(c.writer.buffer, command...)
	if !c.writer.flushing {
		c.flushLocked()
	}
	return true
}

// Listen reads the connection until ctx ends or the connection fails,
// handing RESP3 pushes to Options.OnPush and replies to their calls: it
// serves a connection that carries subscriptions. It returns the error
// that ended it. It needs a live connection (see Connect), and takes over
// from a caller reading its own reply once that caller's turn ends. An
// error reply that no pending call awaits, such as a SUBSCRIBE an ACL
// refuses (NOPERM), goes to refused when not nil; any other unasked reply
// closes the connection. refused runs on Listen's goroutine, gets a value
// valid only during the call, and must not block or call back into the Conn.
func (c *Conn) Listen(ctx context.Context, refused func(resp.Value)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.reader.reading && !c.life.closed && c.life.link != nil {
		if c.reader.listenerTurn == nil {
			c.reader.listenerTurn = make(chan struct{})
		}
		turn := c.reader.listenerTurn
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
	case c.life.closed:
		return ErrClosed
	case c.life.link == nil:
		return c.notConnectedLocked()
	}
	done := ctx.Done()
	stop := context.AfterFunc(ctx, func() { c.interruptReader(done) })
	defer stop()
	c.reader.refused, c.reader.done = refused, done
	if text := c.life.link.refusal; text != nil && refused != nil {
		c.life.link.refusal = nil
		refused(resp.Value{Type: resp.TypeError, Str: text}) // it must not call back into the Conn
	}
	err := c.readLocked(readerListener, nil)
	c.reader.refused, c.reader.done = nil, nil
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
