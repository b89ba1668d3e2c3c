package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/connection"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/redlock/internal/waiting"
)

// allScripts are loaded by every connection when it connects: every
// script a command calls by its SHA1, so that none meets NOSCRIPT.
var allScripts = scriptsBySHA()

// scriptsBySHA returns the scripts of the protocol table's rows sent by
// their SHA1, the count of a Semaphore's free permits, and the reading of
// the marker that follows a vote.
func scriptsBySHA() []*mux.Script {
	scripts := []*mux.Script{permitsFreeLua, quarantine.MarkerScript}
	for _, row := range commandTable {
		if row.bySHA() && !slices.Contains(scripts, row.script) {
			scripts = append(scripts, row.script)
		}
	}
	return scripts
}

// Client holds the connections to N independent Redis masters and makes
// Mutexes that lock across them.
//
// A Client is safe for concurrent use. Close it when done.
type Client struct {
	options       Options
	group         *mux.Group
	addresses     []string // as the connections name them, without passwords
	dialAddresses []string // as given to New
	hasCluster    bool     // a node is a Redis Cluster: a lock's keys must share a hash slot (sameSlot)
	need          int      // the quorum: len(addresses)/2 + 1
	stats         statsRecorder
	closed        atomic.Bool
	closing       chan struct{} // closed by Close: it ends every wait of a Lock
	notifier      waiting.Notifier
	renewer       renewer
	ends          holdEnds
	watcher       watcher
	holds         holdRegistry
	rounds        roundLender // the rounds of the Mutexes' operations

	// runIDs maps each node's address to the run_id it reported when it
	// last connected; duplicate is set when two addresses report the same
	// one. Both are written by the connections' dials.
	runIDsMutex sync.Mutex
	runIDs      map[string]string
	duplicate   atomic.Pointer[error]
	// quarantine keeps the nodes that may have lost keys out of the
	// locks; nil with QuarantineOff.
	quarantine *quarantine.Quarantine
}

// New returns a Client for the independent Redis masters at addresses:
// "host:port", "redis://[user:password@]host:port[/db]", "rediss://…"
// (TLS), "unix:///path", or a Sentinel or Cluster member
// ("redis-sentinel://…", "redis-cluster://…": see docs/deployments.md).
// The quarantine is on whatever Options.Quarantine says when a Sentinel
// or Cluster member is given.
// New never dials: the nodes are dialled when first used. It fails for
// invalid options or addresses, and for an address given twice. Rejected
// credentials and two addresses of one server are found later: they then
// fail every operation (docs/errors.md).
func New(addresses []string, options Options) (*Client, error) {
	options, err := options.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(addresses) == 0 {
		return nil, fmt.Errorf("%w: no addresses", ErrInvalidOptions)
	}
	for _, address := range addresses {
		if mux.ServedBySentinel(address) || mux.IsCluster(address) {
			// A failover is a restart whose data may lack the last writes:
			// the quarantine is on for such a member, whatever the options.
			options.Quarantine = QuarantineOn
		}
	}
	c := &Client{options: options, need: quorum(len(addresses)), runIDs: make(map[string]string, len(addresses)),
		dialAddresses: append([]string(nil), addresses...), closing: make(chan struct{})}
	c.renewer.client = c
	c.ends.client = c
	c.watcher.init(c)
	c.rounds.client = c
	groupOptions := options.connection().Group()
	groupOptions.Scripts = allScripts
	groupOptions.OnConnect = c.recordRunID
	groupOptions.OnUnfinished = c.reportUnfinished
	// A restart of a node that fsyncs every write is trusted at once
	// (the quarantine's epoch.lua): the handshake asks.
	groupOptions.AskPersistence = options.Quarantine == QuarantineOn
	c.group, err = mux.New(addresses, groupOptions)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	c.addresses = make([]string, len(addresses))
	for i := range addresses {
		c.hasCluster = c.hasCluster || c.group.IsCluster(i)
		c.addresses[i] = c.group.Address(i)
		for j := range i {
			if c.addresses[j] == c.addresses[i] {
				return nil, fmt.Errorf("%w: %s is given twice", ErrDuplicateNode, c.addresses[i])
			}
		}
	}
	c.initNotifier()
	if c.options.Quarantine == QuarantineOn {
		c.quarantine = c.newQuarantine(true)
	}
	return c, nil
}

// recordRunID notes the run_id of a server of node that connected (the
// node itself, or a master of a Redis Cluster node), and detects two
// addresses that reach the same server; with Options.Quarantine, the
// node's verdict is unknown again until its epoch markers are read.
func (c *Client) recordRunID(node int, address, runID string) {
	if q := c.quarantine; q != nil {
		q.Reconnected(node, runID) // before the connection carries a command
	}
	if runID == "" {
		return // INFO was denied or is not supported: nothing to compare
	}
	c.runIDsMutex.Lock()
	defer c.runIDsMutex.Unlock()
	c.runIDs[address] = runID
	for other, otherRunID := range c.runIDs {
		if other != address && otherRunID == runID {
			err := fmt.Errorf("%w: %s and %s (run_id %s)", ErrDuplicateNode, other, address, runID)
			c.duplicate.Store(&err)
			return
		}
	}
}

// usable returns why the Client cannot run an operation, or count a
// round it ran, honestly: it was closed (ErrClosed), or two addresses
// reach one server (ErrDuplicateNode). It returns nil otherwise.
func (c *Client) usable() error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := c.duplicate.Load(); err != nil {
		return *err
	}
	return nil
}

// NewMutex returns a Mutex for key. Options that are not valid make every
// method of the Mutex return the validation error, which wraps
// ErrInvalidOptions.
func (c *Client) NewMutex(key string, options MutexOptions) *Mutex {
	return newMutex(c, key, options)
}

// Do locks key, runs fn while holding the lock, and unlocks it. The hold
// is renewed while fn runs (AutoExtend is implied), within options.MaxHold.
// fn's context is cancelled before the validity ends if the hold can no
// longer be proven, with a cause matching ErrLockLost (and ErrClosed after
// Close). Do returns the lock's error, or fn's error joined with the
// unlock's. The unlock also runs when fn panics or calls runtime.Goexit,
// bounded by a few node timeouts whatever ctx does; a panic then goes on.
func (c *Client) Do(ctx context.Context, key string, options MutexOptions, fn func(ctx context.Context) error) error {
	options.AutoExtend = true
	m := c.NewMutex(key, options)
	holdCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Set before the hold starts, so that no loss goes unseen.
	m.hold.mu.Lock()
	m.hold.onLost = cancel
	m.hold.mu.Unlock()
	if err := m.Lock(ctx); err != nil {
		return err
	}
	returned := false
	defer func() {
		if !returned {
			// fn panicked or ended its goroutine: release on the way out.
			c.unlockAfterDo(ctx, m, cancel)
		}
	}()
	fnErr := fn(holdCtx)
	returned = true
	return errors.Join(fnErr, c.unlockAfterDo(ctx, m, cancel))
}

// unlockAfterDo cancels the context of Do's function and unlocks its
// Mutex, within unlockTimeout even if ctx has ended.
func (c *Client) unlockAfterDo(ctx context.Context, m *Mutex, cancel context.CancelCauseFunc) error {
	cancel(nil)
	unlockCtx, cancelUnlock := context.WithTimeout(context.WithoutCancel(ctx), c.unlockTimeout())
	defer cancelUnlock()
	return m.Unlock(unlockCtx)
}

// unlockTimeout bounds an unlock that runs after its caller's context may
// have ended: a few node timeouts.
func (c *Client) unlockTimeout() time.Duration {
	return 4 * c.options.NodeTimeout
}

// Stats returns the Client's counters and latency histograms.
func (c *Client) Stats() Stats {
	return c.stats.snapshot()
}

// Addresses returns the nodes' addresses, without passwords, in the order
// given to New.
func (c *Client) Addresses() []string {
	return append([]string(nil), c.addresses...)
}

// Close closes the connections and ends the Client's holds: their Done
// channels close, and the contexts of Do are cancelled with a cause
// matching ErrLockLost and ErrClosed. Keys not unlocked stay until their
// TTL. Every waiting Lock returns at once with an error matching ErrClosed.
// Releases in flight get up to one node timeout to be confirmed; Close
// returns an error matching ErrReleaseUnconfirmed for the others
// (docs/errors.md). Operations after Close fail with ErrClosed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	close(c.closing)
	c.renewer.close()
	c.holds.close()
	c.ends.close()
	c.watcher.close()
	c.notifier.Close()
	if err := c.group.Close(); err != nil {
		return fmt.Errorf("%w: %w", ErrReleaseUnconfirmed, err)
	}
	return nil
}

// reportUnfinished tells the observer of a release that the transport
// could not finish on a node: its key there ends with its TTL.
func (c *Client) reportUnfinished(address, key string, err error) {
	c.stats.recordNodeError(OutcomeTimeout)
	if observer := c.options.Observer; observer != nil {
		observer.OnNodeError(NodeErrorEvent{Key: key, Operation: OperationUnlock, Address: address,
			Outcome: OutcomeTimeout, Err: fmt.Errorf("%w: %w", ErrReleaseUnconfirmed, err)})
	}
}

// connection returns the fields of o that configure the connections to
// the nodes: credentials, TLS, dial timeout, name and protocol.
func (o Options) connection() connection.Options {
	return connection.Options{
		Username:    o.Username,
		Password:    o.Password,
		TLSConfig:   o.TLSConfig,
		DialTimeout: o.DialTimeout,
		ClientName:  o.ClientName,
		Protocol:    o.Protocol,
	}
}
