package conn

import (
	"context"
	"fmt"
	"sync"
	"time"
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

	// background counts the goroutines the Conn owns (dials, the
	// finisher, the sentinel watcher), which Close waits for.
	background sync.WaitGroup

	// mu guards the queue and the four parts below, which change with it
	// and so share its lock: a command joins the queue as its bytes join
	// the writer's buffer, its reply leaves it under the reader, a carried
	// entry is counted by the carrier, and a failed link fails the queue
	// and empties the buffer at once. mu is held only for bookkeeping,
	// never across a system call that can block.
	mu      sync.Mutex
	pending queue     // commands written or about to be, in order
	life    lifecycle // the live link, its dials and the Conn's close
	writer  writer    // the write buffers and the caller writing them
	reader  reader    // the reading turn and its hand-off
	carrier carrier   // the carried calls and their finisher

	// sentinel follows the sentinels of a master that Redis Sentinel
	// serves. It has a lock of its own.
	sentinel sentinelWatch
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

// New returns a Conn for the address, in one of the forms ParseAddress
// accepts. It does not dial: use Connect to dial at once, or let the first
// Send start the dial.
func New(address string, options Options) (*Conn, error) {
	parsed, err := ParseAddress(address)
	if err != nil {
		return nil, err
	}
	if parsed.Cluster {
		return nil, fmt.Errorf("%w: %s is a Redis Cluster, whose slots are on many servers: a Conn reaches one (see mux.New)", ErrInvalidAddress, parsed)
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
	c := &Conn{address: parsed, options: options, name: parsed.String()}
	c.life.closing = make(chan struct{})
	c.carrier.wake = make(chan struct{}, 1)
	return c, nil
}

// Address returns the server's address without its password.
func (c *Conn) Address() string { return c.name }

// Username returns the user the connection authenticates as: "default"
// when it gives none.
func (c *Conn) Username() string {
	if c.options.Username == "" {
		return "default"
	}
	return c.options.Username
}

// RunID returns the run_id the server reported at the last handshake, or
// "" before the first one. A changed run_id means the server restarted.
func (c *Conn) RunID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.life.runID
}

// FsyncAlways reports whether the server, as the handshake of the last
// connection found it, runs with appendfsync always: every write it
// acknowledges was written to its append-only file and fsynced first.
// It is false unless Options.AskPersistence is set, and when the server
// refused to tell.
func (c *Conn) FsyncAlways() bool { return c.life.fsyncAlways.Load() }

// Connected reports whether the connection is up, without waiting for
// anything: a hint for ordering work, which may be stale at once.
func (c *Conn) Connected() bool { return c.life.connected.Load() }

// Protocol returns the RESP version of the live connection, or 0 when there
// is none.
func (c *Conn) Protocol() Protocol {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.life.link == nil {
		return 0
	}
	return c.life.link.protocol
}

// Do sends the call and waits for its reply, for at most CommandTimeout
// or until ctx ends, whichever comes first. It dials first if needed. The
// returned error is call.Err; when ctx ended first, it is ctx's error and
// the call is abandoned (see Wait). A server error reply is in call.Reply,
// not in the error.
func (c *Conn) Do(ctx context.Context, call *Call) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("conn: %s: %w", c.name, err)
	}
	if err := c.Connect(ctx); err != nil {
		return err
	}
	c.Send(call, time.Now().Add(c.options.CommandTimeout))
	c.Wait(ctx, call)
	if call.abandoned {
		return fmt.Errorf("conn: %s: %w", c.name, call.Err)
	}
	return call.Err
}

// Close closes the connection and fails every call in flight with
// ErrClosed. Carried commands are given until their deadlines to be
// answered first, and those queued behind a dial in progress are written
// when it completes: Close waits at most the dial timeout and the carried
// commands' deadlines. Those that could not be finished are reported to
// Options.OnUnfinished, and Close then returns an error matching
// ErrUnfinished. Close waits for the Conn's background goroutines to end.
// It is safe to call more than once.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.life.closed {
		c.mu.Unlock()
		return nil
	}
	c.life.closed = true
	close(c.life.closing)
	c.sentinel.close()
	c.reader.watch.stopWatching()
	switch {
	case c.carrier.count > 0 && (c.life.link != nil || c.life.dialing):
		// A dial in progress carries the commands queued behind it: it
		// goes on, within its own timeout.
		c.ensureFinisherLocked()
	case c.life.cancel != nil:
		c.life.cancel()
	}
	c.mu.Unlock()
	c.background.Wait()
	c.mu.Lock()
	if c.life.link != nil {
		c.failLinkLocked(c.life.link, ErrClosed)
	}
	c.failPendingLocked(ErrClosed)
	unfinished := c.carrier.takeUnfinished()
	c.mu.Unlock()
	return c.report(unfinished)
}
