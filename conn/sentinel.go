package conn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// A master that Redis Sentinel serves (an address of the redis-sentinel://
// schemes) is found by asking its sentinels at each dial, and checked to
// be a master by the handshake (ROLE). While the Conn is open, a watcher
// follows the sentinels' +switch-master announcements: when the master
// moves, the connection to the old one is closed, and the next command
// dials the new one. A server that answers READONLY was demoted: its
// connection is closed too.

// sentinelWatch is what the Conn keeps of the sentinels: the one that
// answered last, and the watcher of their announcements (see
// watchSentinels), whose connection Close closes. Its lock is its own:
// the watcher takes it, not Conn.mu, to register its connection. Close
// and the first dial take it while they hold Conn.mu, never the other way.
type sentinelWatch struct {
	next atomic.Uint32 // the index of the sentinel that answered last

	mu      sync.Mutex // guards the fields below
	started bool       // the watcher was started
	closed  bool       // the Conn was closed: no connection may be registered
	conn    net.Conn   // the watcher's connection to a sentinel, if any
}

// start reports whether the watcher is to be started now: on the first
// call only.
func (w *sentinelWatch) start() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return false
	}
	w.started = true
	return true
}

// register makes netConn the watcher's connection, for Close to close,
// and reports false, registering nothing, once the Conn is closed.
func (w *sentinelWatch) register(netConn net.Conn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.conn = netConn
	return true
}

// unregister forgets the watcher's connection.
func (w *sentinelWatch) unregister() {
	w.mu.Lock()
	w.conn = nil
	w.mu.Unlock()
}

// close closes the watcher's connection, if any, and keeps any other
// from being registered.
func (w *sentinelWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.conn != nil {
		w.conn.Close()
	}
}

// ServedBySentinel reports whether the Conn's server is a master that
// Redis Sentinel serves (an address of the redis-sentinel:// schemes).
func (c *Conn) ServedBySentinel() bool { return c.address.MasterName != "" }

// resolveMaster asks the sentinels, one after the other from the one that
// answered last, where the master is, and returns its "host:port".
func (c *Conn) resolveMaster(ctx context.Context) (string, error) {
	sentinels := c.address.Sentinels
	first := int(c.sentinel.next.Load())
	var errs []error
	for i := range sentinels {
		at := (first + i) % len(sentinels)
		master, err := c.askSentinel(ctx, sentinels[at])
		if err == nil {
			c.sentinel.next.Store(uint32(at))
			return master, nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %w", sentinels[at], err))
		if ctx.Err() != nil {
			break
		}
	}
	return "", fmt.Errorf("no sentinel named the master %q: %w", c.address.MasterName, errors.Join(errs...))
}

// askSentinel asks one sentinel where the master is.
func (c *Conn) askSentinel(ctx context.Context, sentinel string) (string, error) {
	netConn, reader, err := c.dialSentinel(ctx, sentinel)
	if err != nil {
		return "", err
	}
	defer netConn.Close()
	return c.masterOn(netConn, reader)
}

// masterOn asks, on a sentinel's connection, where the master is.
func (c *Conn) masterOn(netConn net.Conn, reader *resp.Reader) (string, error) {
	reply, err := roundTrip(netConn, reader, resp.AppendCommand(nil, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", c.address.MasterName))
	if err != nil {
		return "", err
	}
	return masterAddress(reply, c.address.MasterName)
}

// dialSentinel connects to a sentinel within ctx, which also bounds the
// connection's first exchange.
func (c *Conn) dialSentinel(ctx context.Context, sentinel string) (net.Conn, *resp.Reader, error) {
	netConn, err := c.connect(ctx, "tcp", sentinel)
	if err != nil {
		return nil, nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		netConn.SetDeadline(deadline)
	}
	reader := resp.NewReader(netConn, c.options.Limits)
	if password := c.address.SentinelPassword; password != "" {
		arguments := []string{"AUTH", password}
		if username := c.address.SentinelUsername; username != "" {
			arguments = []string{"AUTH", username, password}
		}
		reply, err := roundTrip(netConn, reader, resp.AppendCommand(nil, arguments...))
		if err == nil && reply.IsError() {
			err = fmt.Errorf("%w: sentinel %s refused AUTH: %w", ErrAuth, sentinel, reply.Err())
		}
		if err != nil {
			netConn.Close()
			return nil, nil, err
		}
	}
	return netConn, reader, nil
}

// roundTrip writes command on a sentinel's connection and reads one reply.
func roundTrip(netConn net.Conn, reader *resp.Reader, command []byte) (resp.Value, error) {
	if _, err := netConn.Write(command); err != nil {
		return resp.Value{}, err
	}
	return reader.ReadReply()
}

// masterAddress reads the reply of SENTINEL GET-MASTER-ADDR-BY-NAME.
func masterAddress(reply resp.Value, name string) (string, error) {
	if err := authError(reply); err != nil {
		return "", err // the sentinel wants credentials, or refuses the user: retrying cannot fix it
	}
	switch {
	case reply.IsError():
		return "", reply.Err()
	case reply.Null:
		return "", fmt.Errorf("the sentinel serves no master named %q", name)
	case reply.Type != resp.TypeArray || len(reply.Elems) != 2 || reply.Elems[0].Type != resp.TypeBulkString || reply.Elems[1].Type != resp.TypeBulkString:
		return "", fmt.Errorf("%w: SENTINEL GET-MASTER-ADDR-BY-NAME answered %s", ErrUnexpectedReply, reply)
	}
	host, port := string(reply.Elems[0].Str), string(reply.Elems[1].Str)
	if number, err := strconv.Atoi(port); host == "" || err != nil || number <= 0 || number > 65535 {
		return "", fmt.Errorf("%w: SENTINEL GET-MASTER-ADDR-BY-NAME answered %s", ErrUnexpectedReply, reply)
	}
	return net.JoinHostPort(host, port), nil
}

// checkMaster reads the reply of ROLE in the handshake of a Sentinel
// member's server: it must be the master.
func checkMaster(reply resp.Value, address Address) error {
	if err := authError(reply); err != nil {
		return fmt.Errorf("role: %w", err)
	}
	if reply.IsError() {
		return fmt.Errorf("role: %w", reply.Err())
	}
	if reply.Type != resp.TypeArray || len(reply.Elems) == 0 {
		return fmt.Errorf("%w: ROLE answered %s", ErrUnexpectedReply, reply)
	}
	if role := string(reply.Elems[0].Str); role != "master" {
		return fmt.Errorf("%w: the sentinels named %s for %q, which is a %s", ErrNotMaster, address.Addr, address.MasterName, role)
	}
	return nil
}

// watchSentinels follows the sentinels' +switch-master announcements for
// the Conn's master until the Conn is closed, from one sentinel at a time,
// moving to the next when one fails. It is owned by the Conn.
func (c *Conn) watchSentinels() {
	defer c.background.Done()
	backoff := time.Duration(0)
	for i := 0; ; i++ {
		sentinels := c.address.Sentinels
		started := time.Now()
		err := c.followSentinel(sentinels[(int(c.sentinel.next.Load())+i)%len(sentinels)])
		if errors.Is(err, ErrClosed) {
			return
		}
		backoff = NextBackoff(backoff, time.Since(started), c.options.BackoffMin, c.options.BackoffMax)
		timer := time.NewTimer(backoff)
		select {
		case <-c.life.closing:
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// followSentinel subscribes to a sentinel's +switch-master announcements
// and acts on those for the Conn's master, until the connection fails or
// the Conn is closed (ErrClosed). Once subscribed, it asks where the
// master is, so that a switch announced before is not missed.
func (c *Conn) followSentinel(sentinel string) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.options.DialTimeout)
	defer cancel()
	netConn, reader, err := c.dialSentinel(ctx, sentinel)
	if err != nil {
		return err
	}
	if !c.sentinel.register(netConn) {
		netConn.Close()
		return ErrClosed
	}
	defer func() {
		c.sentinel.unregister()
		netConn.Close()
	}()
	if _, err := netConn.Write(resp.AppendCommand(nil, "SUBSCRIBE", "+switch-master")); err != nil {
		return c.closedOr(err)
	}
	if _, err := reader.ReadReply(); err != nil { // the subscription's confirmation
		return c.closedOr(err)
	}
	netConn.SetDeadline(time.Time{})
	if master, err := c.askSentinel(ctx, sentinel); err == nil {
		c.masterMoved(master)
	}
	for {
		message, err := reader.ReadReply()
		if err != nil {
			return c.closedOr(err)
		}
		if name, master, ok := switchMaster(message); ok && name == c.address.MasterName {
			c.masterMoved(master)
		}
	}
}

// closedOr returns ErrClosed once the Conn is closed, err otherwise.
func (c *Conn) closedOr(err error) error {
	select {
	case <-c.life.closing:
		return ErrClosed
	default:
		return err
	}
}

// switchMaster reads a +switch-master message: "NAME OLD-IP OLD-PORT
// NEW-IP NEW-PORT".
func switchMaster(message resp.Value) (name, master string, ok bool) {
	if message.Type != resp.TypeArray && message.Type != resp.TypePush || len(message.Elems) != 3 ||
		string(message.Elems[0].Str) != "message" || string(message.Elems[1].Str) != "+switch-master" {
		return "", "", false
	}
	fields := strings.Fields(string(message.Elems[2].Str))
	if len(fields) != 5 {
		return "", "", false
	}
	return fields[0], net.JoinHostPort(fields[3], fields[4]), true
}

// masterMoved closes the connection to a server that is no longer the
// master: the next command dials the one the sentinels name.
func (c *Conn) masterMoved(master string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.life.link != nil && c.life.link.address != master {
		c.failLinkLocked(c.life.link, fmt.Errorf("%w: the sentinels moved %q to %s", ErrNotMaster, c.address.MasterName, master))
	}
}

// SentinelReport is what one sentinel of a master that Redis Sentinel
// serves says of it (see Conn.AskSentinels).
type SentinelReport struct {
	// Sentinel is the sentinel's "host:port".
	Sentinel string
	// Master is where the sentinel says the master is, "host:port".
	Master string
	// Quorum is the sentinel's answer to SENTINEL CKQUORUM: whether enough
	// sentinels are reachable to agree on a failover and authorize it.
	Quorum string
	// Err is why the sentinel could not be asked, or refused; Master and
	// Quorum are then what it answered before, if anything. An error
	// answer to CKQUORUM is one.
	Err error
}

// AskSentinels asks each sentinel of a master that Redis Sentinel serves
// where the master is, and whether the sentinels have their quorum, in
// the order of the address. It returns nil for any other server.
func (c *Conn) AskSentinels(ctx context.Context) []SentinelReport {
	var reports []SentinelReport
	for _, sentinel := range c.address.Sentinels {
		report := SentinelReport{Sentinel: sentinel}
		report.Master, report.Quorum, report.Err = c.askSentinelReport(ctx, sentinel)
		reports = append(reports, report)
	}
	return reports
}

// askSentinelReport asks one sentinel for AskSentinels.
func (c *Conn) askSentinelReport(ctx context.Context, sentinel string) (master, quorum string, err error) {
	netConn, reader, err := c.dialSentinel(ctx, sentinel)
	if err != nil {
		return "", "", err
	}
	defer netConn.Close()
	if master, err = c.masterOn(netConn, reader); err != nil {
		return master, "", err
	}
	reply, err := roundTrip(netConn, reader, resp.AppendCommand(nil, "SENTINEL", "CKQUORUM", c.address.MasterName))
	switch {
	case err != nil:
		return master, "", err
	case reply.IsError():
		return master, string(reply.Str), reply.Err()
	}
	return master, string(reply.Str), nil
}
