package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/conn"
)

// Cluster is a node of a Group that is a Redis Cluster: each command
// goes to the master of the slot of its first key (routingKey), keyless
// commands to any master. The slot map comes from CLUSTER SHARDS (CLUSTER
// SLOTS on Redis 6), asked of the masters it knows and of the seeds of its
// address; a MOVED reply updates the slot and makes the map read again,
// and so does a master that cannot be reached (a crashed master's replica
// takes its slots without a MOVED from anyone), and a MOVED or ASK reply
// is followed, at most maxRedirects times, by
// sending the command again where it points (after ASKING for an ASK),
// and a TRYAGAIN reply by sending it again after a backoff.
// Concurrent callers still share each master's one connection. A Cluster
// is safe for concurrent use.
type Cluster struct {
	address     conn.Address
	name        string
	options     Options
	connOptions conn.Options

	slots atomic.Pointer[slotMap] // nil until the first map is read

	mu       sync.Mutex
	servers  map[string]*conn.Conn // "host:port" → the connection to that master
	closed   bool
	watchers map[chan struct{}]bool // told of each change of the slot map (WatchMap)
	// reading is held by the goroutine that reads the slot map.
	reading    sync.Mutex
	stale      atomic.Bool  // a MOVED said the map is out of date
	background atomic.Bool  // a goroutine of ReadSlotsInBackground is at it
	mapFailed  atomic.Int64 // when the last reading of the map failed, in Unix nanoseconds; 0 after a success
	rechecked  atomic.Int64 // when a master last could not be reached, in Unix nanoseconds (see Unreachable)
}

// slotMap says which master serves each slot, and lists the masters, their
// addresses ("host:port") and their hash tags (masterTag, "" for a master
// that serves no slot): every owner is among the masters.
type slotMap struct {
	owner     [SlotCount]*conn.Conn
	masters   []*conn.Conn
	hostPorts []string
	tags      []string
}

// tagMasters sets the map's tags, one per master: the smallest hash tag of
// the slots it serves (SlotTag), so that a key that holds "{tag}" goes to
// that master.
func (m *slotMap) tagMasters() {
	smallest := make(map[*conn.Conn]uint32, len(m.masters))
	table := slotTags()
	for slot, owner := range m.owner {
		if tag, seen := smallest[owner]; owner != nil && (!seen || table[slot] < tag) {
			smallest[owner] = table[slot]
		}
	}
	m.tags = make([]string, len(m.masters))
	for i, master := range m.masters {
		if tag, serves := smallest[master]; serves {
			m.tags[i] = strconv.FormatUint(uint64(tag), 10)
		}
	}
}

// Options configures a Cluster.
type Options struct {
	// Conn configures each connection to a master. Its Username and
	// Password default to the address's; its OnCarriedReply is the
	// Cluster's own.
	Conn conn.Options
	// DialTimeout bounds a reading of the slot map that a call waits for.
	// Zero means conn.DefaultDialTimeout.
	DialTimeout time.Duration
	// RequestTimeout bounds the reply of a redirected command.
	RequestTimeout time.Duration
}

// dialTimeout returns DialTimeout, or its default.
func (o Options) dialTimeout() time.Duration {
	if o.DialTimeout == 0 {
		return conn.DefaultDialTimeout
	}
	return o.DialTimeout
}

// New returns the Cluster at address, which conn.ParseAddress parsed. It
// dials nothing: the slot map is read at first use.
func New(address conn.Address, options Options) *Cluster {
	c := &Cluster{address: address, name: address.String(), options: options, servers: make(map[string]*conn.Conn)}
	c.connOptions = options.Conn
	c.connOptions.OnCarriedReply = c.carriedReply
	if c.connOptions.Username == "" {
		c.connOptions.Username = address.Username
	}
	if c.connOptions.Password == "" {
		c.connOptions.Password = address.Password
	}
	return c
}

// Credentials returns the user name and password of the connections to
// the masters: Options.Conn's, or else the address's.
func (c *Cluster) Credentials() (username, password string) {
	return c.connOptions.Username, c.connOptions.Password
}

// ServerURL returns the address of one server of the cluster, in the form
// conn.New takes.
func (c *Cluster) ServerURL(hostPort string) string {
	if c.address.TLS {
		return "rediss://" + hostPort
	}
	return "redis://" + hostPort
}

// passingConn returns a connection of its own to the server at hostPort,
// for one exchange (an ASK, a reading of the slot map), which the caller
// closes: it loads no scripts, and its handshake is not the node's
// (OnConnect).
func (c *Cluster) passingConn(hostPort string) (*conn.Conn, error) {
	options := c.connOptions
	options.OnConnect, options.Scripts, options.AskPersistence, options.OnCarriedReply = nil, nil, false, nil
	return conn.New(c.ServerURL(hostPort), options)
}

// server returns the connection to the master at hostPort, made on first
// use.
func (c *Cluster) server(hostPort string) (*conn.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if server := c.servers[hostPort]; server != nil {
		return server, nil
	}
	if c.closed {
		return nil, conn.ErrClosed
	}
	server, err := conn.New(c.ServerURL(hostPort), c.connOptions)
	if err != nil {
		return nil, err
	}
	c.servers[hostPort] = server
	return server, nil
}

// Address returns the cluster's address, without its password.
func (c *Cluster) Address() string { return c.name }

// Username returns the user the masters' connections log in as:
// "default" when none is set.
func (c *Cluster) Username() string {
	if c.connOptions.Username == "" {
		return "default"
	}
	return c.connOptions.Username
}

// FsyncAlways is false: a cluster's masters fail over to replicas, which
// may lack the last writes, whatever their fsync.
func (c *Cluster) FsyncAlways() bool { return false }

// ServedBySentinel is false: a cluster fails over by itself.
func (c *Cluster) ServedBySentinel() bool { return false }

// AskSentinels returns nil: a cluster has no sentinels.
func (c *Cluster) AskSentinels(context.Context) []conn.SentinelReport { return nil }

// Connected reports whether the slot map is known and every master's
// connection is up.
func (c *Cluster) Connected() bool {
	slots := c.slots.Load()
	if slots == nil {
		return false
	}
	for _, master := range slots.masters {
		if !master.Connected() {
			return false
		}
	}
	return true
}

// Connect reads the slot map, when it is not known or a MOVED made it
// stale, and dials every master at once.
func (c *Cluster) Connect(ctx context.Context) error {
	slots := c.slots.Load()
	if slots == nil || c.stale.Load() {
		var err error
		if slots, err = c.readSlots(ctx); err != nil {
			return err
		}
	}
	errs := make([]error, len(slots.masters))
	var wait sync.WaitGroup
	for i, master := range slots.masters {
		wait.Go(func() { errs[i] = master.Connect(ctx) })
	}
	wait.Wait()
	err := errors.Join(errs...)
	if err != nil && ctx.Err() == nil {
		// A dial that its caller stopped waiting for tells nothing of
		// the master.
		c.Unreachable()
	}
	return err
}

// MapRecheckDelay is the least time between two readings of the slot map
// after masters that could not be reached (see Unreachable).
const MapRecheckDelay = 200 * time.Millisecond

// Unreachable has the slot map read again in the background, at most once
// every MapRecheckDelay, after a master could not be reached: it may have
// failed, and a replica taken its slots, which nobody tells with a MOVED
// (the master is gone) until the map is read again.
func (c *Cluster) Unreachable() {
	now := time.Now().UnixNano()
	last := c.rechecked.Load()
	if now-last < int64(MapRecheckDelay) || !c.rechecked.CompareAndSwap(last, now) {
		return
	}
	c.stale.Store(true)
	c.ReadSlotsInBackground()
}

// Close closes the connection to every master the cluster reached.
func (c *Cluster) Close() error {
	c.mu.Lock()
	c.closed = true
	servers := make([]*conn.Conn, 0, len(c.servers))
	for _, server := range c.servers {
		servers = append(servers, server)
	}
	c.mu.Unlock()
	errs := make([]error, len(servers))
	var wait sync.WaitGroup
	for i, server := range servers {
		wait.Go(func() { errs[i] = server.Close() })
	}
	wait.Wait()
	return errors.Join(errs...)
}

// route returns the master that must answer command, or nil when the
// slot map is not known yet.
func (c *Cluster) route(command []byte) *conn.Conn {
	if key, ok := routingKey(command); ok {
		return c.routeSlot(SlotOf(key))
	}
	return c.routeSlot(AnySlot)
}

// RouteKey returns the master of key's slot, or nil when the slot map is
// not known yet.
func (c *Cluster) RouteKey(key string) *conn.Conn { return c.routeSlot(SlotOf(key)) }

// AnySlot asks routeSlot for any master.
const AnySlot = -1

// routeSlot returns the master of slot, any master for AnySlot or a slot
// without one, or nil when the slot map is not known yet.
func (c *Cluster) routeSlot(slot int) *conn.Conn {
	master, _ := c.slots.Load().route(slot)
	return master
}

// route returns the master of slot in the map, any master for AnySlot or
// a slot without one, and its address ("host:port"); nil and "" for a nil
// map.
func (m *slotMap) route(slot int) (*conn.Conn, string) {
	master, i := m.routeIndex(slot)
	if i < 0 {
		return master, ""
	}
	return master, m.hostPorts[i]
}

// routeIndex returns the master of slot in the map, as route does, and its
// place in the map's masters; nil and -1 for a nil map.
func (m *slotMap) routeIndex(slot int) (*conn.Conn, int) {
	if m == nil || len(m.masters) == 0 {
		return nil, -1
	}
	if slot == AnySlot || m.owner[slot] == nil {
		return m.masters[0], 0
	}
	return m.owner[slot], slices.Index(m.masters, m.owner[slot]) // always found, as the map is made
}

// Send queues call on the master of its slot (see SendTo).
func (c *Cluster) Send(call *conn.Call, deadline time.Time) bool {
	return c.SendTo(c.route(call.Command), call, deadline)
}

// SendTo queues call on master. Before the slot map is known (master is
// nil), it reads the map first, as a connection dials before it writes,
// within the call's deadline and the dial timeout, unless a reading failed
// within the last mapRetryDelay: then, as a connection in its backoff
// does, it fails the call at once with an error matching conn.ErrNotConnected
// (the command was not sent), and reads the map in the background.
func (c *Cluster) SendTo(master *conn.Conn, call *conn.Call, deadline time.Time) bool {
	if master == nil {
		var err error
		if master, err = c.firstSlots(call.Command, deadline); err != nil {
			call.Fail(fmt.Errorf("%w: %s: its slot map is not read: %w", conn.ErrNotConnected, c.name, err))
			return false
		}
	}
	return master.Send(call, deadline)
}

// mapRetryDelay is how long after a failed reading of the slot map the
// calls fail at once, the map being read in the background.
const mapRetryDelay = time.Second

// firstSlots reads the slot map for a call that found none, and returns
// the master that must answer command.
func (c *Cluster) firstSlots(command []byte, deadline time.Time) (*conn.Conn, error) {
	if failed := c.mapFailed.Load(); failed != 0 && time.Since(time.Unix(0, failed)) < mapRetryDelay {
		c.ReadSlotsInBackground()
		return nil, errors.New("the last reading failed")
	}
	ctx, cancel := context.WithDeadline(context.Background(), minTime(deadline, time.Now().Add(c.options.dialTimeout())))
	defer cancel()
	if _, err := c.readSlots(ctx); err != nil {
		return nil, err
	}
	if master := c.route(command); master != nil {
		return master, nil
	}
	return nil, errors.New("no master")
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Flush writes the buffered commands of every master.
func (c *Cluster) Flush() {
	if slots := c.slots.Load(); slots != nil {
		for _, master := range slots.masters {
			master.Flush()
		}
	}
}

// MasterTags returns, per master of the slot map that serves a slot, read
// first if it was not yet, a hash tag that routes to that master: a key
// that holds "{tag}" goes to it. The tag is the smallest of the masters'
// slots' tags (SlotTag).
func (c *Cluster) MasterTags(ctx context.Context) ([]string, error) {
	slots := c.slots.Load()
	if slots == nil {
		var err error
		if slots, err = c.readSlots(ctx); err != nil {
			return nil, err
		}
	}
	tags := make([]string, 0, len(slots.tags))
	for _, tag := range slots.tags {
		if tag != "" {
			tags = append(tags, tag)
		}
	}
	return tags, nil
}

// HostPortOf returns the address ("host:port") of the master of slot, of
// any master for AnySlot or a slot without one, or "" when the slot map is
// not known yet.
func (c *Cluster) HostPortOf(slot int) string {
	_, hostPort := c.slots.Load().route(slot)
	return hostPort
}

// IsMaster reports whether the slot map names the server at hostPort a
// master.
func (c *Cluster) IsMaster(hostPort string) bool {
	slots := c.slots.Load()
	return slots != nil && slices.Contains(slots.hostPorts, hostPort)
}

// WatchMap returns a channel that receives a value after the slot map
// changed (one value waits at most), and the function that ends the
// watch.
func (c *Cluster) WatchMap() (<-chan struct{}, func()) {
	changes := make(chan struct{}, 1)
	c.mu.Lock()
	if c.watchers == nil {
		c.watchers = make(map[chan struct{}]bool)
	}
	c.watchers[changes] = true
	c.mu.Unlock()
	return changes, func() {
		c.mu.Lock()
		delete(c.watchers, changes)
		c.mu.Unlock()
	}
}

// mapChanged tells the watchers of the slot map that it changed.
func (c *Cluster) mapChanged() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for changes := range c.watchers {
		select {
		case changes <- struct{}{}:
		default:
		}
	}
}
