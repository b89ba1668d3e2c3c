package redlock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/epoch"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/resp"
)

// epochScript reads a node's epoch marker, and writes it when it is
// missing or was written by another server process (see quarantine).
//
//go:embed scripts/epoch.lua
var epochScript string

// epochLua is epochScript, sent whole with EVAL: it runs once per
// connection, off the fast path.
var epochLua = protocol.NewScript(epochScript)

// markerScript reads a node's marker and replication ID after a vote, on
// the same connection (see quarantine.judge).
//
//go:embed scripts/marker.lua
var markerScript string

// markerLua is markerScript, sent by its SHA1.
var markerLua = protocol.NewScript(markerScript)

// epochKey is the key of a node's epoch marker, which the doctor shares.
// It has no TTL.
const epochKey = naming.EpochKey

// quarantine keeps, per node, whether its votes count (Options.Quarantine).
// A node that may have lost keys (restarted without them, promoted from a
// replica, flushed) takes part in no lock until its epoch marker is older
// than Options.MaxTTL and its drift allowance by the node's own clock:
// every hold it could have lost has ended by then. Every client reaches
// the same verdict from the node's marker. A node's verdict is unknown
// from a connection to another server process until its marker is read
// (verify), and its votes do not count meanwhile: OnConnect marks it
// before the connection carries a command.
type quarantine struct {
	client    *Client
	threshold time.Duration // MaxTTL and its drift allowance
	origin    time.Time     // the Client's clock when it started: until counts from it
	nodes     []quarantineNode
	verifying sync.Mutex // one verification at a time; guards dialled
	dialled   bool       // the first verification dialled every node
	pending   atomic.Int32
}

// quarantineNode is one node's verdict.
type quarantineNode struct {
	pending atomic.Bool  // its marker was not read since it connected
	until   atomic.Int64 // the end of its quarantine, in nanoseconds from origin
	// marker is what markerLua answers while the node's marker and
	// replication ID stay as its last reading left them ("MARKER/REPLID",
	// given by the epoch script): a vote counts only with that answer
	// just after it (judge).
	marker atomic.Pointer[string]
	// failure is why its last reading failed, when the node answered.
	failure atomic.Pointer[error]
	armed   atomic.Int64 // how many times watchMarker armed its marker
	// masters holds, for a Redis Cluster node, each master's verdict by
	// its address (mux.Round.Server): a failover of one shard keeps that
	// shard alone out. until is the latest.
	masters atomic.Pointer[map[string]masterVerdict]
}

func newQuarantine(c *Client) *quarantine {
	q := &quarantine{client: c, threshold: c.options.MaxTTL + drift(c.options.MaxTTL, c.options.DriftFactor),
		origin: c.options.clock.Now(), nodes: make([]quarantineNode, len(c.dialAddresses))}
	for node := range q.nodes {
		q.nodes[node].pending.Store(true)
	}
	q.pending.Store(int32(len(q.nodes)))
	return q
}

// reconnected notes that node has a new connection, to the server process
// runID ("" when INFO was refused). The verdict of a plain node stands
// when that process wrote the marker it was read from: the server did not
// restart, and each vote is still judged by the marker read after it.
// Otherwise the verdict is unknown until the marker is read again.
func (q *quarantine) reconnected(node int, runID string) {
	n := &q.nodes[node]
	if read := n.marker.Load(); runID != "" && read != nil && !n.pending.Load() &&
		!q.client.group.IsCluster(node) && strings.HasPrefix(*read, runID+" ") {
		return
	}
	q.connected(node)
}

// connected notes that node's verdict is unknown until its marker is read
// again.
func (q *quarantine) connected(node int) {
	if !q.nodes[node].pending.Swap(true) {
		q.pending.Add(1)
	}
}

// excludes reports whether node's votes do not count now, and for how
// long more it is quarantined (0 when its verdict is unknown). server is
// the address of the server that gave the vote (mux.Round.Server): on a
// Redis Cluster node, each master has a verdict of its own, and a master
// the last verification did not ask (the slot map changed since) makes
// the node's verdict unknown. "" asks for the node's verdict as a whole.
func (q *quarantine) excludes(node int, server string) (bool, time.Duration) {
	n := &q.nodes[node]
	if n.pending.Load() {
		return true, 0
	}
	until := n.until.Load()
	if masters := n.masters.Load(); masters != nil && server != "" {
		verdict, known := (*masters)[server]
		if !known {
			q.connected(node)
			return true, 0
		}
		until = verdict.until
	}
	left := time.Duration(until) - q.client.options.clock.Now().Sub(q.origin)
	return left > 0, left
}

// errMarkerChanged is the error of a vote after which the node's epoch
// marker was not the one its verdict was read from.
var errMarkerChanged = fmt.Errorf("%w: its epoch marker changed since it was read (a flush, a restart or a promotion), "+
	"and it votes again once the marker is read", ErrQuarantined)

// errNotFollowed is the error of a Redis Cluster node's vote that no
// reading of its master's marker followed on the master that cast it.
var errNotFollowed = fmt.Errorf("%w: its vote was redirected to another master (a resharding or a failover), "+
	"where no reading of that master's epoch marker followed it", ErrQuarantined)

// judge returns nil when node's confirmation in round counts, and the
// error of its quarantine otherwise. A vote is followed, on the
// connection that carried it, by a reading of the marker of the server
// that cast it (mux.Round.FollowUp; on a Redis Cluster node, that
// master's own marker): the vote counts only if that server still held
// the marker and the replication ID its verdict was read from, whatever
// the notifications of a flush or a promotion say and whenever they come.
// A cluster's vote that no such reading followed does not count.
func (q *quarantine) judge(node int, round *mux.Round) error {
	server := round.Server(node)
	if excluded, left := q.excludes(node, server); excluded {
		return q.errQuarantined(node, left)
	}
	n := &q.nodes[node]
	reply, sent, err := round.FollowUpReply(node)
	if masters := n.masters.Load(); masters != nil {
		switch {
		case errors.Is(err, mux.ErrNotFollowed):
			return errNotFollowed
		case !sent || err != nil || !marked(reply, (*masters)[server].marker):
			q.connected(node)
			return errMarkerChanged
		}
		return nil
	}
	if sent && (err != nil || !n.stillMarked(reply)) {
		q.connected(node) // read it again before the node's next vote
		return errMarkerChanged
	}
	return nil
}

// marked reports whether reply, markerLua's after a vote, is reading.
func marked(reply resp.Value, reading string) bool {
	return reading != "" && reply.Type == resp.TypeBulkString && string(reply.Str) == reading
}

// stillMarked reports whether reply, markerLua's after a vote, shows the
// marker and the replication ID of the node's last reading.
func (n *quarantineNode) stillMarked(reply resp.Value) bool {
	read := n.marker.Load()
	return read != nil && reply.Type == resp.TypeBulkString && string(reply.Str) == *read
}

// errQuarantined returns the error of node, whose vote did not count.
func (q *quarantine) errQuarantined(node int, left time.Duration) error {
	if left <= 0 {
		err := fmt.Errorf("%w: its epoch marker (%s) was not read since it connected, so whether it lost keys is unknown",
			ErrQuarantined, epochKey)
		if failure := q.nodes[node].failure.Load(); failure != nil {
			return fmt.Errorf("%w: %w", err, *failure)
		}
		return err
	}
	return fmt.Errorf("%w for %v more: it restarted, was promoted or was flushed %v ago and may have lost lock keys, "+
		"so it votes again once they have expired (Client.TrustNodes states a new server safe)", ErrQuarantined,
		left.Round(time.Millisecond), (q.threshold - left).Round(time.Millisecond))
}

// verify reads the epoch markers of the nodes whose verdict is unknown,
// writing the missing or foreign ones, before a round whose votes count.
// A node that does not answer stays unknown, and its votes do not count.
// The first verification also waits, at most a dial timeout, for a quorum
// of the nodes to connect; then it waits at most a node timeout. Neither
// outlasts ctx.
func (q *quarantine) verify(ctx context.Context) {
	if q.pending.Load() == 0 {
		return
	}
	c := q.client
	q.verifying.Lock()
	defer q.verifying.Unlock()
	if q.pending.Load() == 0 {
		return // verified by another goroutine meanwhile
	}
	if !q.dialled {
		// The Client dials its nodes when first used: the first
		// verification dials them all, once, and waits for a quorum, then
		// as long again for the others, whose dials end about together on
		// a sound network. A node still being dialled has no vote yet, and
		// is verified once it is connected: a stalled one costs the first
		// lock at most the quorum's dial time.
		q.dialled = true
		dialContext, cancel := context.WithTimeout(ctx, c.options.DialTimeout)
		started := time.Now()
		c.group.ConnectAtLeast(dialContext, c.need)
		restContext, cancelRest := context.WithTimeout(dialContext, time.Since(started))
		c.group.ConnectAtLeast(restContext, len(q.nodes))
		cancelRest()
		cancel()
	}
	runContext, cancel := context.WithTimeout(ctx, max(c.options.NodeTimeout, c.options.DialTimeout))
	defer cancel()
	q.run(runContext, "check", true)
}

// run sends the epoch script with action to the nodes, and records the
// verdicts of those that answer. With pendingOnly, it asks only the nodes
// whose verdict is unknown and that are connected, within a node timeout:
// a node that is down votes in no round anyway, and is asked once it
// connected; a round's wait is not spent on it. The plain nodes whose
// connection found appendfsync always are asked in a round of their own,
// sent with the other, that says so (see epochScript).
func (q *quarantine) run(ctx context.Context, action string, pendingOnly bool) []error {
	c := q.client
	rounds := [2]*mux.Round{c.group.NewRound(), c.group.NewRound()} // the plain nodes', and the durable ones'
	for i, durable := range [2]string{"", "durable"} {
		rounds[i].SetEval(epochLua, 1, 2)
		rounds[i].AppendString(epochKey)
		rounds[i].AppendString(action)
		rounds[i].AppendString(durable)
	}
	wait := max(c.options.NodeTimeout, c.options.DialTimeout)
	if pendingOnly {
		wait = c.options.NodeTimeout
	}
	roundOf := make([]*mux.Round, len(q.nodes))
	byMaster := make([]bool, len(q.nodes)) // the cluster nodes to ask, master by master (askMasters)
	for node := range q.nodes {
		durable := c.group.FsyncAlways(node) && !c.group.ServedBySentinel(node)
		roundOf[node] = rounds[0]
		if durable {
			roundOf[node] = rounds[1]
		}
		asked := !pendingOnly || (q.nodes[node].pending.Load() && c.group.Connected(node))
		byMaster[node] = asked && c.group.IsCluster(node)
		for _, round := range rounds {
			if round != roundOf[node] || !asked || c.group.IsCluster(node) {
				round.Skip(node)
			}
		}
	}
	start := c.options.clock.Now()
	deadline := time.Now().Add(wait)
	for _, round := range rounds {
		c.group.Send(round, deadline)
	}
	var waitErr error
	for _, round := range rounds {
		if err := c.group.Wait(ctx, round, nil); err != nil {
			waitErr = err
		}
	}
	errs := make([]error, len(q.nodes))
	for node := range q.nodes {
		var reply resp.Value
		var masters map[string]masterReading // a cluster node's masters' readings
		round := roundOf[node]
		switch {
		case byMaster[node]:
			reply, masters, errs[node] = q.askMasters(ctx, node, action)
		case !round.Sent(node):
			errs[node] = fmt.Errorf("%w: not connected", ErrNodeUnreachable)
		case waitErr != nil:
			errs[node] = waitErr
		case round.Err(node) != nil:
			errs[node] = fmt.Errorf("%w: %w", ErrNodeUnreachable, round.Err(node))
		default:
			reply = round.Reply(node)
		}
		milliseconds, isAge := epoch.Age(reply)
		switch {
		case errs[node] != nil:
		case reply.IsError():
			errs[node] = fmt.Errorf("epoch marker %s: %w", epochKey, reply.Err())
			q.nodes[node].failure.Store(&errs[node])
		case isAge && milliseconds >= 0:
			age := time.Duration(milliseconds) * time.Millisecond
			n := &q.nodes[node]
			if len(reply.Elems) == 2 {
				reading := string(reply.Elems[1].Str) // what marker.lua answers while nothing changes
				n.marker.Store(&reading)
			}
			// The marker's age was read after start: counting the rest of
			// the quarantine from start ends it no sooner than the node's.
			n.until.Store(int64(start.Sub(q.origin) + q.threshold - age))
			if masters != nil {
				verdicts := make(map[string]masterVerdict, len(masters))
				for server, read := range masters {
					verdicts[server] = masterVerdict{until: int64(start.Sub(q.origin) + q.threshold - read.age), marker: read.marker}
				}
				n.masters.Store(&verdicts)
			}
			n.failure.Store(nil)
			if n.pending.Swap(false) {
				q.pending.Add(-1)
			}
			q.watchMarker(node) // read now, the marker is watched from here on
		default:
			errs[node] = fmt.Errorf("%w: epoch script answered %s", errUnexpectedReply, reply)
		}
	}
	return errs
}

// markerWatchTag is the tag of the armings of the epoch markers: the
// watcher tells them apart by their key, not their tag.
const markerWatchTag = 0

// watchMarker arms node's epoch marker on its subscription connection, on
// a goroutine of the watcher's, when the Client quarantines and speaks
// RESP3: a change of the marker, a flush of the node (which the marker
// does not survive) or the end of that connection makes the node's
// verdict unknown again (see watcher.invalidated), so that a node flushed
// while it stays up, which no client reconnects to, is quarantined at
// once; a marker found missing by the arming read was flushed since it
// was read, and does the same. A node whose arming fails keeps its
// verdict until it reconnects. On a Redis Cluster node, each master's
// marker is armed on the connection to that master.
func (q *quarantine) watchMarker(node int) {
	if q == nil || q != q.client.quarantine || q.client.options.Protocol == ProtocolRESP2 {
		return // TrustNodes's quarantine of a Client that does not quarantine has no verdict to keep
	}
	c := q.client
	w := &c.watcher
	c.notifier.StartTracking()
	w.armingMu.Lock()
	defer w.armingMu.Unlock()
	if w.ctx.Err() != nil {
		return
	}
	w.arming.Go(func() {
		subscriber := c.notifier.TrackingSubscriber()
		if subscriber == nil {
			return
		}
		// A cluster's masters each keep their own marker, watched on the
		// connection to that master.
		markers, err := epoch.MasterMarkers(w.ctx, c.group, node)
		if err != nil {
			return
		}
		if markers == nil {
			markers = []string{epochKey}
		}
		for _, marker := range markers {
			request := mux.NewRequest("GET", marker)
			if subscriber.Track(w.ctx, node, request, markerWatchTag, marker) != nil {
				continue
			}
			if request.Reply().Null {
				q.connected(node)
				return
			}
			q.nodes[node].armed.Add(1)
		}
	})
}

// isEpochKey reports whether key is an epoch marker: a node's, or a
// cluster master's (naming.ClusterEpochKey).
func isEpochKey(key string) bool {
	return key == epochKey || strings.HasPrefix(key, epochKey+":{")
}

// TrustNodes states that the nodes are new, or kept every key they ever
// held: servers started empty for this Client, never used by a lock
// before. It writes each node's epoch marker as if it were as old as the
// node, so that Options.Quarantine does not keep them out of the locks.
// It is the operator's statement, and a false one breaks the exclusion: a
// node that lost keys of live holds, trusted, can give the same lock to a
// second client. The next restart, failover or flush of a node is
// quarantined again. It returns an error naming the nodes that could not
// be reached.
func (c *Client) TrustNodes(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	q := c.quarantine
	if q == nil {
		q = newQuarantine(c) // the markers are written all the same, for Clients that quarantine
	}
	q.verifying.Lock()
	defer q.verifying.Unlock()
	var failures []error
	for node, err := range q.run(ctx, "trust", false) {
		if err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", c.addresses[node], err))
		}
	}
	return errors.Join(failures...)
}
