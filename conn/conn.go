package conn

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
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

	// background counts the goroutines the Conn owns (dials, the
	// finisher), which Close waits for.
	background sync.WaitGroup

	// connected mirrors link != nil, for readers that do not take mu.
	connected atomic.Bool
	// fsyncAlways mirrors the live link's fsyncAlways (see FsyncAlways).
	fsyncAlways atomic.Bool

	// mu guards every field below. It is held only for bookkeeping, never
	// across a system call that can block.
	mu       sync.Mutex
	closed   bool
	closing  chan struct{}      // closed by Close: ends the finisher's waits
	link     *link              // the live connection, nil when there is none
	dialing  bool               // a dial runs in the background
	dialDone chan struct{}      // closed when the dial in progress ends
	cancel   context.CancelFunc // cancels the dial in progress
	lastErr  error              // why the last connection or dial failed
	retryAt  time.Time          // no new dial before this time
	backoff  time.Duration      // the last backoff, doubled on each failure
	runID    string

	// For a master that Redis Sentinel serves: the sentinel that answered
	// last, whether the watcher of its announcements runs (see
	// watchSentinels), and the watcher's connection, which Close closes.
	sentinelNext atomic.Uint32
	watching     bool
	sentinelConn net.Conn

	pending       queue            // commands written or about to be, in order
	writeBuffer   []byte           // commands not yet written
	spareBuffer   []byte           // the other write buffer, swapped in while writing
	flushing      bool             // a caller is writing
	reading       bool             // a caller is reading
	refused       func(resp.Value) // Listen's handler of refused push commands, while it listens
	listenerTurn  chan struct{}    // closed when a reader's turn ends, while a Listen waits for it
	readerDone    <-chan struct{}  // the Done channel of the reader's context, if any: once closed, a timeout is not the server's
	watchedDone   <-chan struct{}  // the Done channel whose end interrupts the reader (see readForLocked)
	stopWatching  func() bool      // undoes the registration for watchedDone
	earlierDone   <-chan struct{}  // the Done channel of the previous reader's context: one two reads in a row use stays watched
	readDeadline  time.Time        // the read deadline set on the socket
	writeDeadline time.Time        // the write deadline set on the socket

	// The carried commands (Call.Carry): how many are pending, whether the
	// finisher goroutine runs, when it looks next (zero: when woken), its
	// wake-up, and what could not be finished, to be reported outside mu.
	carried     int
	finishing   bool
	finisherDue time.Time
	finishWake  chan struct{}
	unfinished  []Unfinished
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
	return &Conn{address: parsed, options: options, name: parsed.String(),
		closing: make(chan struct{}), finishWake: make(chan struct{}, 1)}, nil
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
	return c.runID
}

// FsyncAlways reports whether the server, as the handshake of the last
// connection found it, runs with appendfsync always: every write it
// acknowledges was written to its append-only file and fsynced first.
// It is false unless Options.AskPersistence is set, and when the server
// refused to tell.
func (c *Conn) FsyncAlways() bool { return c.fsyncAlways.Load() }

// Connected reports whether the connection is up, without waiting for
// anything: a hint for ordering work, which may be stale at once.
func (c *Conn) Connected() bool { return c.connected.Load() }

// Protocol returns the RESP version of the live connection, or 0 when there
// is none.
func (c *Conn) Protocol() Protocol {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.link == nil {
		return 0
	}
	return c.link.protocol
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
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.closing)
	if c.sentinelConn != nil {
		c.sentinelConn.Close()
	}
	if c.stopWatching != nil {
		c.stopWatching()
		c.watchedDone, c.stopWatching = nil, nil
	}
	switch {
	case c.carried > 0 && (c.link != nil || c.dialing):
		// A dial in progress carries the commands queued behind it: it
		// goes on, within its own timeout.
		c.ensureFinisherLocked()
	case c.cancel != nil:
		c.cancel()
	}
	c.mu.Unlock()
	c.background.Wait()
	c.mu.Lock()
	if c.link != nil {
		c.failLinkLocked(c.link, ErrClosed)
	}
	c.failPendingLocked(ErrClosed)
	unfinished := c.takeUnfinishedLocked()
	c.mu.Unlock()
	return c.report(unfinished)
}
