package conn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// Conn is a pipelined connection to one Redis server that many callers
// share. It re-dials by itself after a failure. See the package
// documentation for how replies are read and matched.
//
// A Conn is safe for concurrent use.
type Conn struct {
	address Address
	options Options
	name    string // address.String(), for messages

	// dialers counts the background dials, which Close waits for.
	dialers sync.WaitGroup

	// mu guards every field below. It is held only for bookkeeping, never
	// across a system call that can block.
	mu       sync.Mutex
	closed   bool
	link     *link // the live connection, nil when there is none
	dialing  bool
	dialDone chan struct{}      // closed when the dial in progress ends
	cancel   context.CancelFunc // cancels the dial in progress
	lastErr  error              // why the last connection or dial failed
	retryAt  time.Time          // no new dial before this time
	backoff  time.Duration      // the last backoff, doubled on each failure
	runID    string

	pending       queue     // commands written or about to be, in order
	writeBuffer   []byte    // commands not yet written
	spareBuffer   []byte    // the other write buffer, swapped in while writing
	flushing      bool      // a caller is writing
	reading       bool      // a caller is reading
	earliest      time.Time // the earliest deadline of the pending calls
	earliestStale bool      // earliest may be earlier than needed
	readDeadline  time.Time // the read deadline set on the socket
	writeDeadline time.Time // the write deadline set on the socket
	interrupted   bool      // Listen's context ended: its read deadline is not a timeout
}

// readGrace is how long a reader still waits for a reply whose deadline
// has passed by the time it reads. Callers gather replies one server after
// another, so a reply that arrived in time may be read after its deadline:
// the grace lets the read find it in the socket's buffer instead of failing
// the connection. Safety does not depend on it: Redlock measures validity
// by its own clock, after the replies it counts.
const readGrace = time.Millisecond

// socketDeadline returns the deadline to set on the socket for calls due by
// deadline, given that reading starts now.
func socketDeadline(deadline, now time.Time) time.Time {
	if earliest := now.Add(readGrace); deadline.Before(earliest) {
		return earliest
	}
	return deadline
}

// link is one established network connection with its reply reader.
type link struct {
	netConn  net.Conn
	reader   *resp.Reader
	protocol int
}

// New returns a Conn for the address, in one of the forms ParseAddress
// accepts. It does not dial: use Connect to dial at once, or let the first
// Send start the dial.
func New(address string, options Options) (*Conn, error) {
	parsed, err := ParseAddress(address)
	if err != nil {
		return nil, err
	}
	options, err = options.withDefaults()
	if err != nil {
		return nil, err
	}
	if options.Username == "" {
		options.Username = parsed.Username
	}
	if options.Password == "" {
		options.Password = parsed.Password
	}
	return &Conn{address: parsed, options: options, name: parsed.String()}, nil
}

// Address returns the server's address without its password.
func (c *Conn) Address() string { return c.name }

// RunID returns the run_id the server reported at the last handshake, or
// "" before the first one. A changed run_id means the server restarted.
func (c *Conn) RunID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runID
}

// Protocol returns the RESP version of the live connection, or 0 when there
// is none.
func (c *Conn) Protocol() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.link == nil {
		return 0
	}
	return c.link.protocol
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

// Do sends the call and waits for its reply, within the context's deadline
// or CommandTimeout, whichever is earlier. It dials first if needed. The
// returned error is call.Err, joined with the context's error when the
// context ended; a server error reply is in call.Reply, not in the error.
func (c *Conn) Do(ctx context.Context, call *Call) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("conn: %s: %w", c.name, err)
	}
	if err := c.Connect(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(c.options.CommandTimeout)
	if contextDeadline, ok := ctx.Deadline(); ok && contextDeadline.Before(deadline) {
		deadline = contextDeadline
	}
	c.Send(call, deadline)
	c.Wait(call)
	if call.Err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ctx.Err(), call.Err)
	}
	return call.Err
}

// Send queues the call's command and returns without waiting for the
// reply. The call must then be given to Wait or Abandon. If the reply has
// not arrived by the deadline, the connection is closed and every call in
// flight on it fails.
//
// On an idle connection Send writes the command at once. On a busy one it
// leaves the command in the write buffer, where the commands of other
// callers join it, and reports true: the caller must then call Flush, or
// Wait, which flushes before it blocks. Writing many callers' commands in
// one system call is what makes a shared connection faster than one per
// caller.
//
// When there is no live connection, Send starts a dial in the background
// and queues the command behind it; Wait gives up on it at the deadline.
// While the backoff after a failed dial lasts, Send fails the call at once
// with an error matching ErrNotConnected (the command was not sent), so
// that a server that is down costs nothing.
func (c *Conn) Send(call *Call, deadline time.Time) (buffered bool) {
	now := time.Now()
	if deadline.IsZero() {
		deadline = now.Add(c.options.CommandTimeout)
	}
	if call.wake == nil {
		call.wake = make(chan struct{}, 1)
	}
	c.mu.Lock()
	call.Reply = resp.Value{}
	call.Err = nil
	call.Latency = 0
	call.retried = false
	call.sentAt = now
	call.deadline = deadline
	if c.link == nil && !c.closed {
		c.startDialLocked()
	}
	if c.closed || (c.link == nil && !c.dialing) {
		err := ErrClosed
		if !c.closed {
			err = c.notConnectedLocked()
		}
		call.state = callIdle
		call.Err = err
		c.mu.Unlock()
		return false
	}
	call.state = callQueued
	c.pending.push(pending{call: call, deadline: deadline})
	c.writeBuffer = append(c.writeBuffer, call.Command...)
	if c.earliest.IsZero() || deadline.Before(c.earliest) {
		c.earliest = deadline
		if c.reading && c.link != nil {
			// The reader is blocked right now: Go lets the deadline of a
			// pending Read be moved from another goroutine.
			c.readDeadline = socketDeadline(deadline, now)
			c.link.netConn.SetReadDeadline(c.readDeadline)
		}
	}
	if c.link == nil {
		// A dial is under way: the command goes out when it completes, if
		// that is before the deadline (see Wait).
		c.mu.Unlock()
		return true
	}
	buffered = c.flushing || c.pending.len() > 1
	if !buffered {
		c.flushLocked()
	}
	c.mu.Unlock()
	return buffered
}

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

// Flush writes the commands left in the write buffer, unless another
// caller is writing them already.
func (c *Conn) Flush() {
	c.mu.Lock()
	if !c.flushing {
		c.flushLocked()
	}
	c.mu.Unlock()
}

// Wait returns when the call's reply or error is in call.Reply or call.Err.
// It first writes whatever commands are still buffered. While it waits, the
// caller may read the connection for other callers.
func (c *Conn) Wait(call *Call) {
	c.mu.Lock()
	for call.state == callQueued {
		if c.link == nil {
			c.waitForDialLocked(call)
			continue
		}
		if len(c.writeBuffer) > 0 && !c.flushing {
			c.flushLocked()
			continue
		}
		if !c.reading {
			c.readLocked(call)
			continue
		}
		call.waiting = true
		c.mu.Unlock()
		<-call.wake
		c.mu.Lock()
		call.waiting = false
	}
	c.mu.Unlock()
}

// waitForDialLocked waits, up to the call's deadline, for the dial that
// will carry the call. If the deadline passes first, every call waiting for
// the dial fails with ErrNotConnected: none of them was written.
func (c *Conn) waitForDialLocked(call *Call) {
	call.waiting = true
	c.mu.Unlock()
	timer := time.NewTimer(time.Until(call.deadline))
	select {
	case <-call.wake:
	case <-timer.C:
	}
	timer.Stop()
	c.mu.Lock()
	call.waiting = false
	if call.state == callQueued && c.link == nil && !time.Now().Before(call.deadline) {
		c.failPendingLocked(fmt.Errorf("%w: not connected again before the deadline", ErrNotConnected))
	}
}

// Abandon stops waiting for the call: its reply will be read and dropped
// by whoever reads the connection next, keeping the order of replies. The
// call may be reused at once. Abandon does nothing for a call that already
// has its reply.
func (c *Conn) Abandon(call *Call) {
	c.mu.Lock()
	if call.state == callQueued {
		c.pending.drop(call)
		call.state = callIdle
		call.Err = errAbandoned
		if call.deadline.Equal(c.earliest) {
			c.earliestStale = true
		}
	}
	c.mu.Unlock()
}

// Close closes the connection, fails every call in flight with ErrClosed,
// and waits for a dial in progress to end. It is safe to call more than
// once.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	if c.cancel != nil {
		c.cancel()
	}
	if c.link != nil {
		c.failLinkLocked(c.link, ErrClosed)
	}
	c.mu.Unlock()
	c.dialers.Wait()
	return nil
}

// flushLocked writes the buffered commands until none is left. Commands
// that other callers append while it writes go out with the next write.
func (c *Conn) flushLocked() {
	c.flushing = true
	for len(c.writeBuffer) > 0 && c.link != nil {
		link := c.link
		buffer := c.writeBuffer
		c.writeBuffer = c.spareBuffer[:0]
		if deadline := socketDeadline(c.earliest, time.Now()); !deadline.Equal(c.writeDeadline) {
			c.writeDeadline = deadline
			link.netConn.SetWriteDeadline(deadline)
		}
		c.mu.Unlock()
		_, err := link.netConn.Write(buffer)
		c.mu.Lock()
		c.spareBuffer = buffer[:0]
		if err != nil {
			c.failLinkLocked(link, err)
		}
	}
	c.flushing = false
}

// readLocked makes the caller the reader: it reads replies and delivers
// them to their calls until its own call is done and nothing more is
// buffered, then passes the reading to a caller that is waiting. With a nil
// own call it is a listener: it reads until Listen's context interrupts it
// or the link fails, and returns the error that ended it.
func (c *Conn) readLocked(own *Call) error {
	c.reading = true
	defer c.handOffReadingLocked()
	link := c.link
	for link != nil {
		if own == nil && c.interrupted {
			// Listen's context ended while a frame was being handled.
			c.interrupted = false
			return context.Canceled
		}
		if c.earliestStale {
			c.earliestStale = false
			c.earliest = c.pending.earliestDeadline()
		}
		// With no call pending, a listener waits as long as it takes; a
		// caller is only finishing buffered bytes, and waits no longer than
		// the grace for the rest of them.
		deadline := socketDeadline(c.earliest, time.Now())
		if own == nil && c.earliest.IsZero() {
			deadline = time.Time{}
		}
		if !deadline.Equal(c.readDeadline) {
			c.readDeadline = deadline
			link.netConn.SetReadDeadline(deadline)
		}
		c.mu.Unlock()
		value, err := link.reader.ReadReply()
		c.mu.Lock()
		if link != c.link {
			return ErrNotConnected // the link failed meanwhile and its calls were failed
		}
		if err != nil {
			if own == nil && c.interrupted && errors.Is(err, os.ErrDeadlineExceeded) && c.pending.len() == 0 {
				// Listen's context ended; the bytes read so far stay
				// buffered for the next reader.
				c.interrupted = false
				return context.Canceled
			}
			c.failLinkLocked(link, err)
			return err
		}
		if value.Type == resp.TypePush {
			if link.protocol == ProtocolRESP2 {
				err := fmt.Errorf("%w: push frame on a RESP2 connection", ErrUnexpectedReply)
				c.failLinkLocked(link, err)
				return err
			}
			if onPush := c.options.OnPush; onPush != nil {
				c.mu.Unlock()
				onPush(value)
				c.mu.Lock()
			}
			continue
		}
		entry, ok := c.pending.pop()
		if !ok {
			err := fmt.Errorf("%w: a reply arrived that no command asked for", ErrUnexpectedReply)
			c.failLinkLocked(link, err)
			return err
		}
		if entry.deadline.Equal(c.earliest) {
			c.earliestStale = true
		}
		if call := entry.call; call != nil {
			c.deliverLocked(call, value, entry.deadline)
		}
		// The caller leaves once its own reply is in, unless buffered bytes
		// can serve callers still waiting, or belong to no command at all
		// and must be looked at (a push, or an unsolicited reply that
		// closes the connection) before they are taken for the next reply.
		if own != nil && own.state != callQueued {
			if link.reader.Buffered() == 0 || (c.pending.len() > 0 && c.pending.firstWaiting() == nil) {
				return nil
			}
		}
	}
	return ErrNotConnected
}

// handOffReadingLocked ends a reader's turn and wakes a caller that waits
// for its reply, which becomes the next reader.
func (c *Conn) handOffReadingLocked() {
	c.reading = false
	if next := c.pending.firstWaiting(); next != nil {
		next.signal()
	}
}

// Listen reads the connection until ctx ends or the connection fails,
// handing RESP3 pushes to Options.OnPush and replies to their calls: it
// serves a connection that carries subscriptions, where messages arrive
// without a command to wait for. It returns the error that ended it:
// ctx's error when ctx ended. Listen needs a live connection (see Connect)
// that no other caller is reading.
func (c *Conn) Listen(ctx context.Context) error {
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
	err := c.readLocked(nil)
	c.interrupted = false
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// deliverLocked completes call with value, or sends the call again as EVAL
// when the server does not know its script.
func (c *Conn) deliverLocked(call *Call, value resp.Value, deadline time.Time) {
	if call.isNoScript(value) {
		call.retried = true
		c.pending.push(pending{call: call, deadline: deadline})
		c.writeBuffer = call.appendEval(c.writeBuffer)
		if !c.flushing {
			c.flushLocked()
		}
		return
	}
	call.setReply(value)
	call.Latency = time.Since(call.sentAt)
	call.state = callIdle
	if call.waiting {
		call.signal()
	}
}

// failLinkLocked closes link, if it is still the live one, and fails every
// call in flight on it with err.
func (c *Conn) failLinkLocked(link *link, err error) {
	if c.link != link {
		return
	}
	c.link = nil
	link.netConn.Close()
	if err != ErrClosed {
		err = nodeError(c.name, err)
	}
	c.lastErr = err
	c.failPendingLocked(err)
}

// failPendingLocked fails every call in flight with err and drops the
// commands not yet written.
func (c *Conn) failPendingLocked(err error) {
	now := time.Now()
	for c.pending.len() > 0 {
		entry, _ := c.pending.pop()
		if call := entry.call; call != nil {
			call.Err = err
			call.Latency = now.Sub(call.sentAt)
			call.state = callIdle
			if call.waiting {
				call.signal()
			}
		}
	}
	c.writeBuffer = c.writeBuffer[:0]
	c.earliest, c.earliestStale = time.Time{}, false
	c.readDeadline, c.writeDeadline = time.Time{}, time.Time{}
}

// notConnectedLocked describes why a call cannot be sent now.
func (c *Conn) notConnectedLocked() error {
	if c.lastErr != nil {
		return fmt.Errorf("%w: %w", ErrNotConnected, c.lastErr)
	}
	return fmt.Errorf("conn: %s: %w", c.name, ErrNotConnected)
}

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
	installed := false
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
		c.lastErr = nil
		c.backoff = 0
		c.retryAt = time.Time{}
		c.runID = runID
		installed = true
		// Commands sent during the dial go out now; a caller waiting for
		// them becomes the reader.
		c.flushLocked()
		if next := c.pending.firstWaiting(); next != nil {
			next.signal()
		}
	}
	c.mu.Unlock()
	if installed && c.options.OnConnect != nil {
		c.options.OnConnect(c.name, runID)
	}
}
