package mux

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/resp"
)

// ErrPushUnavailable is matched by the error given to
// SubscribeOptions.OnUnavailable: the server cannot carry push commands
// (it speaks only RESP2, Options.Protocol is ProtocolRESP2, or it refused
// a push command, as an ACL without channel rights does).
var ErrPushUnavailable = errors.New("mux: server cannot carry subscriptions")

// The bounds of the backoff between two dials of one subscription
// connection. It doubles after each connection that failed or did not last
// subscriptionBackoffMax, and starts again from the bottom after one that
// lasted: a server that drops every subscription is dialled a few times a
// second at first, then every subscriptionBackoffMax, never in a loop.
const (
	subscriptionBackoffMin = 50 * time.Millisecond
	subscriptionBackoffMax = 2 * time.Second
)

// SubscribeOptions are the handlers of a Subscriber. They are called on
// the Subscriber's goroutines, one per server, must be safe for concurrent
// use, and must not block.
type SubscribeOptions struct {
	// OnConnect is called after each (re)connection of server node's
	// subscription connection: pushes may have been missed, and the
	// subscriptions must be made again (Subscriber.SendTo).
	OnConnect func(node int)
	// OnPush receives each push frame from server node (confirmations,
	// messages), with a value valid only during the call.
	OnPush func(node int, push resp.Value)
	// OnUnavailable is called once for a server that cannot carry
	// subscriptions, with an error matching ErrPushUnavailable. Its
	// connection is closed for the life of the Subscriber.
	OnUnavailable func(node int, err error)
}

// Subscriber keeps one connection per server of a Group that carries push
// commands (SUBSCRIBE, UNSUBSCRIBE) and reads the pushes they bring, apart
// from the connections of rounds. A connection that fails is dialled again
// after a jittered backoff that doubles, capped; a server that cannot carry
// subscriptions is reported once and left alone.
//
// A Subscriber is safe for concurrent use. Close it when done.
type Subscriber struct {
	group      *Group
	options    SubscribeOptions
	nodes      []*subscription
	cancel     context.CancelFunc
	goroutines sync.WaitGroup
}

// subscription is one server's subscription connection.
type subscription struct {
	conn *conn.Conn // nil when the server was unavailable from the start

	mu          sync.Mutex
	unavailable bool
}

// Subscribe starts a Subscriber over the Group's servers: one connection
// and one goroutine per server, dialled at once. With Options.Protocol
// ProtocolRESP2 it dials nothing, and reports every server unavailable.
func (g *Group) Subscribe(options SubscribeOptions) *Subscriber {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Subscriber{group: g, options: options, cancel: cancel, nodes: make([]*subscription, len(g.nodes))}
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
		connOptions := g.options.connOptions()
		connOptions.Scripts = nil
		connOptions.OnConnect, connOptions.OnUnfinished = nil, nil
		if onPush := options.OnPush; onPush != nil {
			connOptions.OnPush = func(push resp.Value) error { onPush(i, push); return nil }
		}
		var err error
		if sub.conn, err = conn.New(g.dialAddresses[i], connOptions); err != nil {
			// New validated every address already.
			s.goroutines.Go(func() { s.unavailable(i, fmt.Errorf("%w: %w", ErrPushUnavailable, err)) })
			continue
		}
		s.goroutines.Go(func() { s.listen(ctx, i) })
	}
	return s
}

// listen keeps server node's subscription connection up and read until
// ctx ends or the server turns out unable to carry subscriptions.
func (s *Subscriber) listen(ctx context.Context, node int) {
	sub := s.nodes[node]
	defer sub.conn.Close()
	retry := time.NewTimer(0)
	defer retry.Stop()
	var backoff time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
		if sub.conn.Connect(ctx) == nil {
			if sub.conn.Protocol() != ProtocolRESP3 {
				s.unavailable(node, fmt.Errorf("%w: %s speaks only RESP2, and subscriptions need RESP3 (Redis 6 or later)",
					ErrPushUnavailable, sub.conn.Address()))
				return
			}
			if onConnect := s.options.OnConnect; onConnect != nil {
				onConnect(node)
			}
			connected := time.Now()
			listening, stop := context.WithCancel(ctx)
			sub.conn.Listen(listening, func(refusal resp.Value) {
				s.unavailable(node, fmt.Errorf("%w: %s refused a subscription: %w", ErrPushUnavailable, sub.conn.Address(), refusal.Err()))
				stop()
			})
			stop()
			if s.isUnavailable(node) {
				return
			}
			if time.Since(connected) >= subscriptionBackoffMax {
				backoff = 0 // the connection lasted: its end is news, not a loop
			}
		}
		backoff = min(max(2*backoff, subscriptionBackoffMin), subscriptionBackoffMax)
		// Full jitter in [backoff/2, backoff] keeps clients out of step.
		retry.Reset(backoff/2 + rand.N(backoff/2+1))
	}
}

// unavailable marks server node unable to carry subscriptions and reports
// it, once.
func (s *Subscriber) unavailable(node int, err error) {
	sub := s.nodes[node]
	sub.mu.Lock()
	first := !sub.unavailable
	sub.unavailable = true
	sub.mu.Unlock()
	if first && s.options.OnUnavailable != nil {
		s.options.OnUnavailable(node, err)
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
func (s *Subscriber) SendTo(node int, command []byte) bool {
	sub := s.nodes[node]
	if sub.conn == nil || s.isUnavailable(node) {
		return false
	}
	return sub.conn.SendPush(command)
}

// Close closes the subscription connections and waits for the
// Subscriber's goroutines.
func (s *Subscriber) Close() {
	s.cancel()
	s.goroutines.Wait()
}
