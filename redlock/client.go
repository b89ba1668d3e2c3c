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
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/redlock/internal/round"
	"github.com/lockmux/lockmux/redlock/internal/spare"
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
	rounds        round.Lender          // the rounds of the Mutexes' operations
	waits         spare.List[waitState] // lent to the Locks under way (lendWait)

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

// clock tells the time for every elapsed-time and validity computation of
// a Client. Its readings must carry a monotonic clock reading, as those of
// time.Now do, so that a jump of the wall clock cannot move a deadline: only
// differences between readings (Sub, Since-style arithmetic, Add) are used,
// never their wall-clock value. A clock must be safe for concurrent use.
//
// Options.clock is nil in production, meaning realClock; tests inject a
// clock to move time by hand.
type clock interface {
	// Now returns the current time, with a monotonic clock reading.
	Now() time.Time
}

// realClock is the clock of time.Now.
type realClock struct{}

// Now returns time.Now().
func (realClock) Now() time.Time { return time.Now() }

// epochKey is the key of a node's epoch marker, which the doctor shares.
const epochKey = quarantine.EpochKey

// newQuarantine returns a quarantine of c's nodes; with watch, it arms
// the markers on RESP3 subscription connections.
func (c *Client) newQuarantine(watch bool) *quarantine.Quarantine {
	config := quarantine.Config{
		Group: c.group, Nodes: len(c.dialAddresses), Need: c.need, Clock: c.options.clock,
		Threshold:   c.options.MaxTTL + round.Drift(c.options.MaxTTL, c.options.DriftFactor),
		DialTimeout: c.options.DialTimeout, NodeTimeout: c.options.NodeTimeout,
		Quarantined: ErrQuarantined, Unreachable: ErrNodeUnreachable, UnexpectedReply: errUnexpectedReply,
	}
	if watch && c.options.Protocol != ProtocolRESP2 {
		config.Arm = c.watcher.armMarker
	}
	return quarantine.New(config)
}

// armMarker runs arm on a watcher goroutine, unless the Client is closing.
func (w *watcher) armMarker(arm func(ctx context.Context, subscriber *mux.Subscriber)) {
	c := w.client
	c.notifier.StartTracking()
	w.Go(func() {
		subscriber := c.notifier.TrackingSubscriber()
		if subscriber == nil {
			return
		}
		arm(w.Context(), subscriber)
	})
}

// TrustNodes states that the nodes are new, or kept every key they ever
// held, so the quarantine lets them vote at once. A false statement breaks
// the exclusion (docs/operations.md). It returns an error naming the nodes
// not reached.
func (c *Client) TrustNodes(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	q := c.quarantine
	if q == nil {
		q = c.newQuarantine(false) // the markers are written all the same, for Clients that quarantine
	}
	var failures []error
	for node, err := range q.Trust(ctx) {
		if err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", c.addresses[node], err))
		}
	}
	return errors.Join(failures...)
}

// sameSlot returns why the keys of keySets, which one lock writes together
// in one script per node, cannot be written together on a node that is a
// Redis Cluster: they do not share a hash slot, and a script's keys must. It returns nil
// when no node is a cluster, or when they do share one. The keys a lock
// writes next to its own (a fence counter, a fair lock's line, a
// read/write lock's readers, a semaphore's permits) add a suffix to its
// key or name: they share its slot when it holds a hash tag.
func (c *Client) sameSlot(keySets ...[]string) error {
	if !c.hasCluster {
		return nil
	}
	first, slot := "", -1
	for _, keys := range keySets {
		for _, key := range keys {
			switch other := mux.Slot(key); {
			case slot < 0:
				first, slot = key, other
			case other != slot:
				return fmt.Errorf("%w: a node is a Redis Cluster, and the keys a lock writes together must share a hash slot: "+
					"%q (slot %d) and %q (slot %d) do not; name the resource in a hash tag, as in {orders:1}, in every key "+
					"(the fence counter, line, readers and permits add a suffix to it)", ErrInvalidOptions, first, slot, key, other)
			}
		}
	}
	return nil
}

// releasedChannelPrefix returns the start of the channel on which the
// releases of key are announced; the key follows it. On a Client with a
// Redis Cluster member, releases are announced with sharded pub/sub
// (SPUBLISH), on the master of the key's slot, and waiters subscribe there
// (SSUBSCRIBE): the channel's own slot must be the key's, and the prefix
// holds a hash tag of that slot (naming.ShardedChannelPrefix). Every node
// of such a Client announces so, plain nodes too (Redis 7 has sharded
// pub/sub outside a cluster as well): one command goes to every node.
func (c *Client) releasedChannelPrefix(key string) string {
	if !c.hasCluster {
		return releasedChannelPrefix
	}
	return naming.ShardedChannelPrefix(mux.SlotTag(mux.Slot(key)))
}

// releasedChannel returns the channel on which the releases of key are
// announced.
func (c *Client) releasedChannel(key string) string { return c.releasedChannelPrefix(key) + key }

// announceWhereAsked announces again, under message, the release that a
// round of m made on a Redis Cluster member after an ASK redirect
// (mux.Group.Asked): it did so on the master the keys' slot is being
// migrated to, while the master the slot leaves still serves the slot's
// sharded channels, where the waiters listen, until the migration ends.
// SPUBLISH goes to the master of the channel's slot in the member's slot
// map, which is that one. A fair lock's release is announced again
// without the first waiter in line, which only the node knew: it wakes a
// waiter as a plain lock's release does.
func (m *Mutex) announceWhereAsked(ctx context.Context, r *round.Round, message []byte) {
	if m.announceOn == "" {
		return
	}
	c := m.client
	for node, outcome := range r.Tally.Nodes {
		// Only the replies the round gathered are read: a node's outcome
		// is OutcomeConfirmed only then.
		if outcome.Outcome != round.OutcomeConfirmed || r.Mux.Reply(node).Int <= 0 || !c.group.Asked(r.Mux, node) {
			continue // nothing released, or announced where the waiters listen
		}
		channels := m.releasedChannels()
		requests := make([]*mux.Request, len(channels))
		for i, channel := range channels {
			requests[i] = mux.NewRequest("SPUBLISH", channel, string(message))
		}
		c.group.Do(ctx, node, requests...) // as in the scripts, an announcement that fails loses nothing else
	}
}
