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
	"github.com/lockmux/lockmux/redlock/internal/liveness"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/redlock/internal/round"
	"github.com/lockmux/lockmux/redlock/internal/waiting"
)

// allScripts are loaded by every connection, so that no call by SHA1
// meets NOSCRIPT.
var allScripts = scriptsBySHA()

// scriptsBySHA returns every script sent by its SHA1.
func scriptsBySHA() []*mux.Script {
	scripts := []*mux.Script{permitsFreeLua, quarantine.MarkerScript}
	for _, script := range round.ScriptsBySHA() {
		if !slices.Contains(scripts, script) {
			scripts = append(scripts, script)
		}
	}
	return scripts
}

// Client holds the connections to N independent Redis masters and makes
// Mutexes that lock across them. It is safe for concurrent use. Close it
// when done.
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
	ends          liveness.Ends[*livenessLock]
	watcher       watcher
	holds         liveness.Registry[*livenessLock]
	rounds        round.Lender // the rounds of the Mutexes' operations

	// runIDs maps each server's address to its last run_id; duplicate is
	// set when two share one. The connections' dials write both.
	runIDsMutex sync.Mutex
	runIDs      map[string]string
	duplicate   atomic.Pointer[error]
	// quarantine is nil with QuarantineOff.
	quarantine *quarantine.Quarantine
}

// New returns a Client for the Redis masters at addresses: "host:port",
// "redis://[user:password@]host:port[/db]", "rediss://…", "unix:///path",
// "redis-sentinel://…" or "redis-cluster://…" (docs/deployments.md). It
// never dials. It fails for invalid options or addresses, and for an
// address given twice (ErrDuplicateNode).
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
			// A failover may lose the last writes: always quarantine.
			options.Quarantine = QuarantineOn
		}
	}
	c := &Client{options: options, need: round.Quorum(len(addresses)), runIDs: make(map[string]string, len(addresses)),
		dialAddresses: append([]string(nil), addresses...), closing: make(chan struct{})}
	c.renewer.init(c)
	c.ends.Init(options.clock)
	c.watcher.init(c)
	groupOptions := options.connection().Group()
	groupOptions.Scripts = allScripts
	groupOptions.OnConnect = c.recordRunID
	groupOptions.OnUnfinished = c.reportUnfinished
	// A node that fsyncs every write is trusted after a restart.
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
	c.rounds.Init(c.group, c.need, c.quarantine)
	return c, nil
}

// recordRunID notes the run_id of a server of node that connected, to
// find two addresses of one server, and tells the quarantine.
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

// usable returns ErrClosed or ErrDuplicateNode when the Client cannot run
// or count a round, and nil otherwise.
func (c *Client) usable() error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := c.duplicate.Load(); err != nil {
		return *err
	}
	return nil
}

// NewMutex returns a Mutex for key. With invalid options, every method
// returns an error wrapping ErrInvalidOptions.
func (c *Client) NewMutex(key string, options MutexOptions) *Mutex {
	return newMutex(c, key, options)
}

// Do locks key, runs fn under the renewed lock (AutoExtend is implied),
// and unlocks, even if fn panics (the panic goes on). fn's context is
// cancelled with a cause matching ErrLockLost if the hold is lost. Do
// returns the lock's error, or fn's joined with the unlock's.
func (c *Client) Do(ctx context.Context, key string, options MutexOptions, fn func(ctx context.Context) error) error {
	options.AutoExtend = true
	m := c.NewMutex(key, options)
	holdCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Set before the hold starts, so that no loss goes unseen.
	m.hold.Mu.Lock()
	m.hold.OnLost = cancel
	m.hold.Mu.Unlock()
	if err := m.Lock(ctx); err != nil {
		return err
	}
	returned := false
	defer func() {
		if !returned {
			// fn panicked or called runtime.Goexit.
			c.unlockAfterDo(ctx, m, cancel)
		}
	}()
	fnErr := fn(holdCtx)
	returned = true
	return errors.Join(fnErr, c.unlockAfterDo(ctx, m, cancel))
}

// unlockAfterDo cancels fn's context and unlocks m, even if ctx ended.
func (c *Client) unlockAfterDo(ctx context.Context, m *Mutex, cancel context.CancelCauseFunc) error {
	cancel(nil)
	unlockCtx, cancelUnlock := context.WithTimeout(context.WithoutCancel(ctx), c.unlockTimeout())
	defer cancelUnlock()
	return m.Unlock(unlockCtx)
}

// unlockTimeout bounds an unlock whose caller's context may have ended.
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

// Close closes the connections and ends the Client's holds, whose keys
// stay until their TTL. Waiting Locks and later calls fail with ErrClosed.
// Releases in flight get one node timeout; Close's error matches
// ErrReleaseUnconfirmed for the others (docs/errors.md).
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	close(c.closing)
	c.renewer.Close()
	// Outside the registry's mutex: the loss reaches the observer, who
	// may unlock.
	for _, l := range c.holds.Close() {
		(*Mutex)(l).endByClose()
	}
	c.ends.Close()
	c.watcher.Close()
	c.notifier.Close()
	if err := c.group.Close(); err != nil {
		return fmt.Errorf("%w: %w", ErrReleaseUnconfirmed, err)
	}
	return nil
}

// reportUnfinished reports a release the transport could not finish.
func (c *Client) reportUnfinished(address, key string, err error) {
	c.stats.recordNodeError(OutcomeTimeout)
	if observer := c.options.Observer; observer != nil {
		observer.OnNodeError(NodeErrorEvent{Key: key, Operation: OperationUnlock, Address: address,
			Outcome: OutcomeTimeout, Err: fmt.Errorf("%w: %w", ErrReleaseUnconfirmed, err)})
	}
}

// connection returns the fields of o that configure the connections.
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
