package quarantine

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
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/resp"
)

//go:embed scripts/epoch.lua
var epochSource string

//go:embed scripts/marker.lua
var markerSource string

// EpochScript reads a node's epoch marker, writing it when missing or
// foreign. It goes with EVAL, once per connection.
var EpochScript = protocol.NewScript(epochSource)

// MarkerScript reads a node's marker and replication ID after a vote.
var MarkerScript = protocol.NewScript(markerSource)

// EpochKey is the key of a node's epoch marker. It has no TTL.
const EpochKey = naming.EpochKey

// Config is what a Quarantine needs of its Client.
type Config struct {
	Group       *mux.Group
	Nodes       int // the number of nodes
	Need        int // the quorum
	Clock       interface{ Now() time.Time }
	Threshold   time.Duration // MaxTTL and its drift allowance
	DialTimeout time.Duration
	NodeTimeout time.Duration

	// Arm runs arm on a key watcher goroutine unless the Client is
	// closing; nil when markers are not watched.
	Arm func(arm func(ctx context.Context, subscriber *mux.Subscriber))

	// The errors a Quarantine wraps: the Client's ErrQuarantined,
	// ErrNodeUnreachable and its error of an unexpected reply.
	Quarantined     error
	Unreachable     error
	UnexpectedReply error
}

// Quarantine keeps, per node, whether its votes count. They count once its
// epoch marker is older than Config.Threshold by its own clock, and not
// while its verdict is unknown (before Verify).
type Quarantine struct {
	config    Config
	origin    time.Time // the Client's clock when it started: until counts from it
	nodes     []quarantineNode
	verifying sync.Mutex // one verification at a time; guards dialled
	dialled   bool       // the first verification dialled every node
	pending   atomic.Int32

	markerChanged error // the error of a vote after which the marker changed
	notFollowed   error // the error of a cluster's vote no reading followed
}

// quarantineNode is one node's verdict.
type quarantineNode struct {
	pending atomic.Bool  // its marker was not read since it connected
	until   atomic.Int64 // the end of its quarantine, in nanoseconds from origin
	// marker is MarkerScript's answer while the node is as last read
	// ("MARKER/REPLID"); a vote counts only if followed by it (Judge).
	marker atomic.Pointer[string]
	// failure is why its last reading failed, when the node answered.
	failure atomic.Pointer[error]
	armed   atomic.Int64 // how many times WatchMarker armed its marker
	// masters holds a Cluster node's verdicts by master address; until is
	// the latest.
	masters atomic.Pointer[map[string]masterVerdict]
}

// New returns the Quarantine of config's nodes, whose verdicts are all
// unknown.
func New(config Config) *Quarantine {
	q := &Quarantine{config: config, origin: config.Clock.Now(), nodes: make([]quarantineNode, config.Nodes),
		markerChanged: fmt.Errorf("%w: its epoch marker changed since it was read (a flush, a restart or a promotion), "+
			"and it votes again once the marker is read", config.Quarantined),
		notFollowed: fmt.Errorf("%w: its vote was redirected to another master (a resharding or a failover), "+
			"where no reading of that master's epoch marker followed it", config.Quarantined)}
	for node := range q.nodes {
		q.nodes[node].pending.Store(true)
	}
	q.pending.Store(int32(len(q.nodes)))
	return q
}

// Reconnected notes node's new connection to process runID ("" when INFO
// was refused). A plain node keeps its verdict if that process wrote its
// marker; otherwise the verdict is unknown.
func (q *Quarantine) Reconnected(node int, runID string) {
	n := &q.nodes[node]
	if read := n.marker.Load(); runID != "" && read != nil && !n.pending.Load() &&
		!q.config.Group.IsCluster(node) && strings.HasPrefix(*read, runID+" ") {
		return
	}
	q.Connected(node)
}

// Connected makes node's verdict unknown until its marker is read again.
func (q *Quarantine) Connected(node int) {
	if !q.nodes[node].pending.Swap(true) {
		q.pending.Add(1)
	}
}

// Excludes reports whether node's votes do not count now, and for how long
// (0 when unknown). server is the vote's master in a Cluster, or "" for the
// whole node.
func (q *Quarantine) Excludes(node int, server string) (bool, time.Duration) {
	n := &q.nodes[node]
	if n.pending.Load() {
		return true, 0
	}
	until := n.until.Load()
	if masters := n.masters.Load(); masters != nil && server != "" {
		verdict, known := (*masters)[server]
		if !known {
			q.Connected(node)
			return true, 0
		}
		until = verdict.until
	}
	left := time.Duration(until) - q.config.Clock.Now().Sub(q.origin)
	return left > 0, left
}

// Judge returns nil when node's confirmation in round counts: the reading
// that followed it (mux.Round.FollowUp) shows the verdict's marker.
func (q *Quarantine) Judge(node int, round *mux.Round) error {
	server := round.Server(node)
	if excluded, left := q.Excludes(node, server); excluded {
		return q.Err(node, left)
	}
	n := &q.nodes[node]
	reply, sent, err := round.FollowUpReply(node)
	if masters := n.masters.Load(); masters != nil {
		switch {
		case errors.Is(err, mux.ErrNotFollowed):
			return q.notFollowed
		case !sent || err != nil || !marked(reply, (*masters)[server].marker):
			q.Connected(node)
			return q.markerChanged
		}
		return nil
	}
	if sent && (err != nil || !n.stillMarked(reply)) {
		q.Connected(node) // read it again before the node's next vote
		return q.markerChanged
	}
	return nil
}

// marked reports whether reply, MarkerScript's after a vote, is reading.
func marked(reply resp.Value, reading string) bool {
	return reading != "" && reply.Type == resp.TypeBulkString && string(reply.Str) == reading
}

// stillMarked reports whether reply, MarkerScript's after a vote, shows the
// marker and the replication ID of the node's last reading.
func (n *quarantineNode) stillMarked(reply resp.Value) bool {
	read := n.marker.Load()
	return read != nil && reply.Type == resp.TypeBulkString && string(reply.Str) == *read
}

// Err returns the error of node, whose vote did not count: left is what
// Excludes said.
func (q *Quarantine) Err(node int, left time.Duration) error {
	if left <= 0 {
		err := fmt.Errorf("%w: its epoch marker (%s) was not read since it connected, so whether it lost keys is unknown",
			q.config.Quarantined, EpochKey)
		if failure := q.nodes[node].failure.Load(); failure != nil {
			return fmt.Errorf("%w: %w", err, *failure)
		}
		return err
	}
	return fmt.Errorf("%w for %v more: it restarted, was promoted or was flushed %v ago and may have lost lock keys, "+
		"so it votes again once they have expired (Client.TrustNodes states a new server safe)", q.config.Quarantined,
		left.Round(time.Millisecond), (q.config.Threshold - left).Round(time.Millisecond))
}

// Verify reads the unknown nodes' epoch markers, writing missing or foreign
// ones. The first call waits a dial timeout for a quorum, later ones a
// node timeout; neither outlasts ctx.
func (q *Quarantine) Verify(ctx context.Context) {
	if q.pending.Load() == 0 {
		return
	}
	c := q.config
	q.verifying.Lock()
	defer q.verifying.Unlock()
	if q.pending.Load() == 0 {
		return // verified by another goroutine meanwhile
	}
	if !q.dialled {
		// The first one waits for a quorum, then as long again for the rest.
		q.dialled = true
		dialContext, cancel := context.WithTimeout(ctx, c.DialTimeout)
		started := time.Now()
		c.Group.ConnectAtLeast(dialContext, c.Need)
		restContext, cancelRest := context.WithTimeout(dialContext, time.Since(started))
		c.Group.ConnectAtLeast(restContext, len(q.nodes))
		cancelRest()
		cancel()
	}
	runContext, cancel := context.WithTimeout(ctx, max(c.NodeTimeout, c.DialTimeout))
	defer cancel()
	q.run(runContext, "check", true)
}

// run sends the epoch script with action and records the answers'
// verdicts; with pendingOnly, only to connected unknown nodes. Durable
// nodes (appendfsync always) get a round of their own.
func (q *Quarantine) run(ctx context.Context, action string, pendingOnly bool) []error {
	c := q.config
	rounds := [2]*mux.Round{c.Group.NewRound(), c.Group.NewRound()} // the plain nodes', and the durable ones'
	for i, durable := range [2]string{"", "durable"} {
		rounds[i].SetEval(EpochScript, 1, 2)
		rounds[i].AppendString(EpochKey)
		rounds[i].AppendString(action)
		rounds[i].AppendString(durable)
	}
	wait := max(c.NodeTimeout, c.DialTimeout)
	if pendingOnly {
		wait = c.NodeTimeout
	}
	roundOf := make([]*mux.Round, len(q.nodes))
	byMaster := make([]bool, len(q.nodes)) // the cluster nodes to ask, master by master (askMasters)
	for node := range q.nodes {
		durable := c.Group.FsyncAlways(node) && !c.Group.ServedBySentinel(node)
		roundOf[node] = rounds[0]
		if durable {
			roundOf[node] = rounds[1]
		}
		asked := !pendingOnly || (q.nodes[node].pending.Load() && c.Group.Connected(node))
		byMaster[node] = asked && c.Group.IsCluster(node)
		for _, round := range rounds {
			if round != roundOf[node] || !asked || c.Group.IsCluster(node) {
				round.Skip(node)
			}
		}
	}
	start := c.Clock.Now()
	deadline := time.Now().Add(wait)
	for _, round := range rounds {
		c.Group.Send(round, deadline)
	}
	var waitErr error
	for _, round := range rounds {
		if err := c.Group.Wait(ctx, round, nil); err != nil {
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
			errs[node] = fmt.Errorf("%w: not connected", c.Unreachable)
		case waitErr != nil:
			errs[node] = waitErr
		case round.Err(node) != nil:
			errs[node] = fmt.Errorf("%w: %w", c.Unreachable, round.Err(node))
		default:
			reply = round.Reply(node)
		}
		milliseconds, isAge := Age(reply)
		switch {
		case errs[node] != nil:
		case reply.IsError():
			errs[node] = fmt.Errorf("epoch marker %s: %w", EpochKey, reply.Err())
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
			n.until.Store(int64(start.Sub(q.origin) + c.Threshold - age))
			if masters != nil {
				verdicts := make(map[string]masterVerdict, len(masters))
				for server, read := range masters {
					verdicts[server] = masterVerdict{until: int64(start.Sub(q.origin) + c.Threshold - read.age), marker: read.marker}
				}
				n.masters.Store(&verdicts)
			}
			n.failure.Store(nil)
			if n.pending.Swap(false) {
				q.pending.Add(-1)
			}
			q.WatchMarker(node) // read now, the marker is watched from here on
		default:
			errs[node] = fmt.Errorf("%w: epoch script answered %s", c.UnexpectedReply, reply)
		}
	}
	return errs
}

// markerWatchTag tags the markers' armings; the watcher tells them by key.
const markerWatchTag = 0

// WatchMarker arms node's epoch markers (Config.Arm): a change, flush or
// missing marker makes the verdict unknown. A failed arming keeps it.
func (q *Quarantine) WatchMarker(node int) {
	if q == nil || q.config.Arm == nil {
		return // TrustNodes's quarantine of a Client that does not quarantine has no verdict to keep
	}
	q.config.Arm(func(ctx context.Context, subscriber *mux.Subscriber) {
		// A cluster's masters each keep their own marker, watched on the
		// connection to that master.
		markers, err := MasterMarkers(ctx, q.config.Group, node)
		if err != nil {
			return
		}
		if markers == nil {
			markers = []string{EpochKey}
		}
		for _, marker := range markers {
			request := mux.NewRequest("GET", marker)
			if subscriber.Track(ctx, node, request, markerWatchTag, marker) != nil {
				continue
			}
			if request.Reply().Null {
				q.Connected(node)
				return
			}
			q.nodes[node].armed.Add(1)
		}
	})
}

// IsEpochKey reports whether key is an epoch marker: a node's, or a
// cluster master's (naming.ClusterEpochKey).
func IsEpochKey(key string) bool {
	return key == EpochKey || strings.HasPrefix(key, EpochKey+":{")
}

// Trust writes every node's epoch marker as old as the node, and returns
// each node's error.
func (q *Quarantine) Trust(ctx context.Context) []error {
	q.verifying.Lock()
	defer q.verifying.Unlock()
	return q.run(ctx, "trust", false)
}
