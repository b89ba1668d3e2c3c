package mux

import (
	"context"
	"sync"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/mux/internal/cluster"
)

// shardLinks are a Redis Cluster's subscription connections, one
// per master that a push command was routed to. Sharded pub/sub
// (SSUBSCRIBE, SPUBLISH) lives on the master of the channel's slot: a
// subscription is made where the slot map says, and made again when the
// map changes (a failover, a resharding), when a master answers MOVED, and
// when a connection is replaced (SubscribeOptions.OnConnect covers all
// three). A master that loses a slot ends its subscriptions to the slot's
// channels itself, with an SUNSUBSCRIBE push the owner of the Subscriber
// sees.
type shardLinks struct {
	cluster *cluster.Cluster
	options conn.Options // for each master's connection

	// redirected receives a value after a master refused a push command
	// with a redirect, and when the Subscriber starts: the node's
	// subscriptions are made (again).
	redirected chan struct{}

	mu    sync.Mutex
	links map[string]*shardLink // "host:port" → the connection to that master
}

// shardLink is the subscription connection to one master, read by a
// goroutine of its own until stop.
type shardLink struct {
	*link
	stop context.CancelFunc
}

// sendToShard writes command to the master of the slot of its first
// channel (any master for a command without one), on that master's
// subscription connection. It reports false when there is none yet (see
// shardLink): the connection's OnConnect, or the map's arrival, has the
// subscriptions made again.
func (s *Subscriber) sendToShard(node int, command []byte) bool {
	slot := cluster.AnySlot
	if channel, ok := cluster.FirstArgument(command); ok {
		slot = cluster.SlotOf(channel)
	}
	l := s.shardLink(node, slot)
	return l != nil && l.conn.SendPush(command)
}

// shardLink returns node's subscription connection to the master of slot
// (any master for cluster.AnySlot), or nil when it has none yet: it is dialled
// then, or, before the slot map is known, the map is read.
func (s *Subscriber) shardLink(node, slot int) *shardLink {
	shards := s.nodes[node].shards
	hostPort := shards.cluster.HostPortOf(slot)
	if hostPort == "" {
		shards.cluster.ReadSlotsInBackground()
		return nil
	}
	shards.mu.Lock()
	l := shards.links[hostPort]
	shards.mu.Unlock()
	if l == nil {
		s.dial(node, hostPort)
	}
	return l
}

// dial makes the subscription connection of node's master at hostPort,
// unless it has one, and starts its goroutine.
func (s *Subscriber) dial(node int, hostPort string) {
	shards := s.nodes[node].shards
	shards.mu.Lock()
	defer shards.mu.Unlock()
	if shards.links[hostPort] != nil {
		return
	}
	server, err := s.newLink(node, shards.cluster.ServerURL(hostPort), shards.options)
	if err != nil {
		return // the address came from the cluster's own map, in the form New takes
	}
	ctx, stop := context.WithCancel(s.ctx)
	if !s.start(func() { s.listen(ctx, node, server, true) }) {
		stop()
		server.conn.Close()
		return
	}
	shards.links[hostPort] = &shardLink{link: server, stop: stop}
}

// redirected takes a master's refusal of a push command with a redirect:
// the slot has moved. The slot map learns it, and the node's
// subscriptions are made again.
func (s *Subscriber) redirected(node int, to cluster.Redirect) {
	shards := s.nodes[node].shards
	shards.cluster.Moved(to) // a failure leaves the map as it was: the subscriptions are made again where it says
	select {
	case shards.redirected <- struct{}{}:
	default:
	}
}

// followMap has node's subscriptions made again (SubscribeOptions.OnConnect)
// after each change of the cluster's slot map and after each redirect, at
// most once every cluster.MapRecheckDelay, and closes the connections to servers
// that are no longer masters.
func (s *Subscriber) followMap(ctx context.Context, node int) {
	shards := s.nodes[node].shards
	changes, unwatch := shards.cluster.WatchMap()
	defer unwatch()
	defer shards.closeAll()
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
		case <-shards.redirected:
		}
		if s.isUnavailable(node) {
			return
		}
		shards.closeGone()
		if onConnect := s.options.OnConnect; onConnect != nil {
			onConnect(node)
		}
		pause.Reset(cluster.MapRecheckDelay)
		select {
		case <-ctx.Done():
			return
		case <-pause.C:
		}
	}
}

// closeGone closes the connections to servers that the slot map no longer
// names masters.
func (shards *shardLinks) closeGone() {
	shards.mu.Lock()
	defer shards.mu.Unlock()
	for hostPort, link := range shards.links {
		if !shards.cluster.IsMaster(hostPort) {
			link.stop()
			delete(shards.links, hostPort)
		}
	}
}

// closeAll closes every connection.
func (shards *shardLinks) closeAll() {
	shards.mu.Lock()
	defer shards.mu.Unlock()
	for hostPort, link := range shards.links {
		link.stop()
		delete(shards.links, hostPort)
	}
}
