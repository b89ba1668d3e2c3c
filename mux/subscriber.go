package mux

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/mux/internal/cluster"
	"github.com/lockmux/lockmux/resp"
)

// The bounds of the backoff between two dials of one subscription
// connection (conn.NextBackoff). It doubles after each connection that
// failed or did not last subscriptionBackoffMax, and starts again from the
// bottom after one that lasted: a server that drops every subscription is
// dialled a few times a second at first, then every
// subscriptionBackoffMax, never in a loop.
const (
	subscriptionBackoffMin = 50 * time.Millisecond
	subscriptionBackoffMax = 2 * time.Second
)

// SubscribeOptions are the handlers of a Subscriber. They are called on
// the Subscriber's goroutines, one per subscription connection and one
// per Redis Cluster, or on a goroutine that
// reads a subscription connection for its own reply (Track); they must be
// safe for concurrent use and must not block: they may Send, but not
// Track, which waits for a reply that only their return lets be read.
type SubscribeOptions struct {
	// OnConnect is called after each (re)connection of server node's
	// subscription connection: pushes may have been missed, and the
	// subscriptions must be made again (Subscriber.SendTo). With key
	// tracking, the connection tracks by then: keys may be armed again
	// (Subscriber.Track, from another goroutine). For a Redis Cluster
	// node it is called when the Subscriber starts, after each
	// (re)connection to one of its masters, after each change of its slot
	// map and after a master refused a subscription with MOVED: the
	// node's subscriptions are then made again, each where the map says.
	OnConnect func(node int)
	// OnPush receives each push frame from server node (confirmations,
	// messages), with a value valid only during the call. With key
	// tracking, invalidations go to OnInvalidate instead.
	OnPush func(node int, push resp.Value)
	// OnUnavailable is called once for a server that cannot carry
	// subscriptions, with an error matching ErrPushUnavailable. Its
	// connection is closed for the life of the Subscriber, and it cannot
	// track keys either.
	OnUnavailable func(node int, err error)

	// OnInvalidate, when not nil, turns key tracking on: each subscription
	// connection enables CLIENT TRACKING when it connects, Track arms keys,
	// and OnInvalidate is told of the armed keys that may have changed
	// (see Invalidation), in the order the server reported them, and at
	// most once per arming.
	OnInvalidate func(Invalidation)
	// OnTrackingUnavailable is called once for a server that cannot track
	// keys, with an error matching ErrTrackingUnavailable: it cannot carry
	// subscriptions, or it refused CLIENT TRACKING (an ACL without the
	// client|tracking command). Its subscriptions go on.
	OnTrackingUnavailable func(node int, err error)
}

// Subscriber keeps one connection per server of a Group for the push
// commands (SUBSCRIBE, UNSUBSCRIBE, SSUBSCRIBE, SUNSUBSCRIBE), apart from
// the connections of rounds, and reads the pushes they bring. A Redis
// Cluster gets one connection per master, and each command goes to
// the master of its first channel's slot. A failed connection is dialled
// again after a capped, jittered backoff; a server that cannot carry
// subscriptions is reported once and left alone. With
// SubscribeOptions.OnInvalidate, the same connections track keys (see
// Track). A Subscriber is safe for concurrent use. Close it when done.
type Subscriber struct {
	group      *Group
	options    SubscribeOptions
	nodes      []*subscription
	ctx        context.Context // ends with Close
	cancel     context.CancelFunc
	goroutines sync.WaitGroup

	mu      sync.Mutex // guards closing, and the start of goroutines after Subscribe
	closing bool
}

// subscription is one server's subscription connection, or a Redis
// Cluster's connections to its masters.
type subscription struct {
	link   *link       // a server's connection; nil for a cluster, and when the server was unavailable from the start
	shards *shardLinks // a cluster's connections (cluster_subscriber.go); nil for a server

	// mu guards unavailable, trackingErr, and the tracking of every link
	// of the subscription.
	mu          sync.Mutex
	unavailable bool
	trackingErr error // why the server cannot track keys, matching ErrTrackingUnavailable; nil while it may
}

// link is one subscription connection: a server's, or one of a cluster
// node's, to one master. Its key tracking is its own (see tracking.go).
type link struct {
	conn     *conn.Conn
	tracking tracking // guarded by the subscription's mu

	// enable is the CLIENT TRACKING command, sent by the link's goroutine
	// after each dial. reported holds the invalidations of one push while
	// they are reported, outside mu; only the reader of the connection
	// uses it, and there is one reader at a time.
	enable   conn.Call
	reported []Invalidation
	// ready is set from just before OnConnect until the connection is
	// lost: SendTo writes no push command before then, so that a
	// subscription first made on a connection is never taken for one made
	// again by OnConnect.
	ready atomic.Bool
}

// newLink returns a link over a new connection to address, whose pushes
// and finished calls go to the Subscriber's handlers for node.
func (s *Subscriber) newLink(node int, address string, options conn.Options) (*link, error) {
	l := &link{tracking: tracking{armed: makeArmedKeys()}}
	options.OnPush = func(push resp.Value) error { return s.push(node, l, push) }
	if s.options.OnInvalidate != nil {
		options.OnFinish = func(call *conn.Call) { s.finished(node, l, call) }
	}
	var err error
	l.conn, err = conn.New(address, options)
	return l, err
}

// Subscribe starts a Subscriber over the Group's servers: one connection
// and one goroutine per server, dialled at once; a Redis Cluster's
// connections to its masters are dialled as push commands and key
// armings are routed to them. With Options.Protocol ProtocolRESP2 it
// dials nothing, and reports every server unavailable.
func (g *Group) Subscribe(options SubscribeOptions) *Subscriber {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Subscriber{group: g, options: options, ctx: ctx, cancel: cancel, nodes: make([]*subscription, len(g.nodes))}
	for i := range s.nodes {
		s.nodes[i] = &subscription{} // all of them before any goroutine reads the slice
	}
	for i, node := range g.nodes {
		sub := s.nodes[i]
		if g.options.Protocol == ProtocolRESP2 {
			s.goroutines.Go(func() {
				s.unavailable(i, fmt.Errorf("%w: %s: Options.Protocol is ProtocolRESP2, and subscriptions need RESP3", ErrPushUnavailable, node.Address()))
			})
			continue
		}
		connOptions := g.options.connOptions(i)
		connOptions.Scripts = nil
		connOptions.OnConnect, connOptions.OnUnfinished = nil, nil
		// Only the link's goroutine dials, so that a connection tracks
		// before it carries an arming read (see Track).
		connOptions.NoDialOnSend = true
		if clustered, ok := node.(*cluster.Cluster); ok {
			connOptions.Username, connOptions.Password = clustered.Credentials()
			sub.shards = &shardLinks{cluster: clustered, options: connOptions, links: make(map[string]*shardLink), redirected: make(chan struct{}, 1)}
			// The node's first OnConnect comes at once, as a server's
			// comes with its first connection: its subscriptions go where
			// the map says, read first if need be (see sendToShard).
			sub.shards.redirected <- struct{}{}
			s.goroutines.Go(func() { s.followMap(ctx, i) })
			continue
		}
		var err error
		if sub.link, err = s.newLink(i, g.dialAddresses[i], connOptions); err != nil {
			// New validated every address already.
			s.goroutines.Go(func() { s.unavailable(i, fmt.Errorf("%w: %w", ErrPushUnavailable, err)) })
			continue
		}
		s.goroutines.Go(func() { s.listen(ctx, i, sub.link, false) })
	}
	return s
}

// listen keeps link, server node's subscription connection or one of a
// cluster's (shard), up and read until ctx ends or the server turns
// out unable to carry subscriptions. A cluster's master that refuses a
// command with a redirect (MOVED) has the slot map read again, and the
// node's subscriptions made again where the map says (see followMap).
func (s *Subscriber) listen(ctx context.Context, node int, l *link, shard bool) {
	link := l.conn
	defer link.Close()
	retry := time.NewTimer(0)
	defer retry.Stop()
	var backoff time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
		var lasted time.Duration // how long the connection was listened to
		l.ready.Store(false)
		if link.Connect(ctx) == nil {
			if link.Protocol() != ProtocolRESP3 {
				s.unavailable(node, fmt.Errorf("%w: %s speaks only RESP2, and subscriptions need RESP3 (Redis 6 or later)",
					ErrPushUnavailable, link.Address()))
				return
			}
			if s.enableTracking(ctx, node, l) {
				l.ready.Store(true)
				if onConnect := s.options.OnConnect; onConnect != nil {
					onConnect(node)
				}
				connected := time.Now()
				listening, stop := context.WithCancel(ctx)
				var refused error
				err := link.Listen(listening, func(refusal resp.Value) {
					if shard {
						if redirect, ok := cluster.ParseRedirect(refusal.Str); ok {
							s.redirected(node, redirect)
							return
						}
					}
					refused = fmt.Errorf("%w: %s refused a subscription: %w", ErrPushUnavailable, link.Address(), refusal.Err())
					s.unavailable(node, refused)
					stop()
				})
				stop()
				if refused != nil {
					err = refused
				}
				s.disconnected(ctx, node, l, err)
				if s.isUnavailable(node) {
					return
				}
				lasted = time.Since(connected)
			}
		}
		if shard && ctx.Err() == nil {
			s.nodes[node].shards.cluster.Unreachable() // the master failed or went: its slots may have a new one
		}
		backoff = conn.NextBackoff(backoff, lasted, subscriptionBackoffMin, subscriptionBackoffMax)
		// Full jitter in [backoff/2, backoff] keeps clients out of step.
		retry.Reset(backoff/2 + rand.N(backoff/2+1))
	}
}

// unavailable marks server node unable to carry subscriptions, and so
// unable to track keys, and reports it, once.
func (s *Subscriber) unavailable(node int, err error) {
	sub := s.nodes[node]
	sub.mu.Lock()
	first := !sub.unavailable
	sub.unavailable = true
	sub.mu.Unlock()
	if sub.shards != nil {
		sub.shards.closeAll()
	}
	if first && s.options.OnUnavailable != nil {
		s.options.OnUnavailable(node, err)
	}
	if s.options.OnInvalidate != nil {
		s.trackingUnavailable(node, fmt.Errorf("%w: %w", ErrTrackingUnavailable, err))
	}
}

func (s *Subscriber) isUnavailable(node int) bool {
	sub := s.nodes[node]
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.unavailable
}

// Send writes a push command (SUBSCRIBE, UNSUBSCRIBE) to every server whose
// subscription connection is up; the others get their subscriptions again
// when they connect (SubscribeOptions.OnConnect).
func (s *Subscriber) Send(command []byte) {
	for node := range s.nodes {
		s.SendTo(node, command)
	}
}

// SendTo writes a push command to server node, if its subscription
// connection is up, and reports whether it did.
// For a Redis Cluster, it writes to the master of the slot of the
// command's first channel, dialling it first when it has no connection
// yet (it reports false then: the subscriptions are made again once the
// connection is up, see SubscribeOptions.OnConnect).
func (s *Subscriber) SendTo(node int, command []byte) bool {
	sub := s.nodes[node]
	switch {
	case s.isUnavailable(node):
		return false
	case sub.shards != nil:
		return s.sendToShard(node, command)
	case sub.link == nil || !sub.link.ready.Load():
		return false
	}
	return sub.link.conn.SendPush(command)
}

// Close closes the subscription connections and waits for the
// Subscriber's goroutines.
func (s *Subscriber) Close() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancel()
	s.goroutines.Wait()
}

// start runs f on a goroutine of the Subscriber, unless it is closing,
// and reports whether it did.
func (s *Subscriber) start(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.goroutines.Go(f)
	return true
}
