package mux

import (
	"context"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/mux/internal/cluster"
	"github.com/lockmux/lockmux/resp"
)

// Key tracking on the subscription connections.
//
// A connection that tracks (CLIENT TRACKING ON, default mode) is sent an
// invalidation push, once, for each key it read (with any read-only
// command, PTTL included) the next time that key changes on the server:
// a write by any connection, an expiry, an eviction, or the server
// forgetting the key when its tracking table is full. A flush is one push
// whose keys are a null: every key. The server writes the push into the
// connection's output when the change happens, so it comes before the
// reply to any command the connection sends after the change: a read sent
// once a write elsewhere was answered is answered after that write's
// invalidation (TestOwnWriteInvalidationComesBeforeTheArmingReply).
//
// So a key is armed by the reply to a read, and an invalidation ends the
// arming in effect when it arrives. The Subscriber keeps, per server, the
// armed keys with the tag of the read that armed them. The Conn tells it
// of each reply the moment it is delivered (conn.Options.OnFinish), before
// it handles the next push, and the end of a connection fails the reads
// still under way before Listen returns: whoever reads the connection, an
// invalidation is reported with the tag of the last arming answered before
// it, never of one answered after it.

// InvalidationCause says why an armed key may have changed.
type InvalidationCause uint8

const (
	// InvalidatedKey: the server reported a change of the key: a write by
	// any connection, an expiry, an eviction, or a tracking table that was
	// full (then nothing changed).
	InvalidatedKey InvalidationCause = iota + 1
	// InvalidatedFlush: the server reported a flush: every key may have
	// changed.
	InvalidatedFlush
	// InvalidatedDisconnected: the connection that tracked the key ended
	// (Err says why), and the server no longer reports its changes; those
	// made before the end may have gone unreported.
	InvalidatedDisconnected
)

// String returns the cause's name.
func (c InvalidationCause) String() string {
	switch c {
	case InvalidatedKey:
		return "key"
	case InvalidatedFlush:
		return "flush"
	case InvalidatedDisconnected:
		return "disconnected"
	default:
		return fmt.Sprintf("InvalidationCause(%d)", c)
	}
}

// Invalidation is an armed key that may have changed on one server. It
// ends the key's arming: the key is reported again only after another
// Track arms it.
type Invalidation struct {
	// Node is the server's index in the Group.
	Node int
	// Key is the key, as given to Track.
	Key string
	// Tag is the tag given to the Track whose read armed the key: the last
	// one answered before the server reported the change.
	Tag uint64
	// Cause says what happened.
	Cause InvalidationCause
	// Err is why the connection ended, for InvalidatedDisconnected.
	Err error
}

// trackingState is where key tracking stands on one subscription
// connection.
type trackingState uint8

const (
	// trackingOff: the connection does not track yet, or it ended and the
	// next has not enabled tracking yet.
	trackingOff trackingState = iota
	// trackingOn: the live connection tracks; keys may be armed.
	trackingOn
)

// tracking is the key tracking of one subscription connection (link). It
// is guarded by the subscription's mutex.
type tracking struct {
	state trackingState

	// connection counts the ends of the connections that tracked: an
	// arming read counts only if it was answered on the connection it was
	// meant for (see Track).
	connection uint64

	armed    armedKeys    // the armings in effect
	readings []arming     // Track calls not yet returned
	rounds   roundArmings // tracked rounds' calls not finished yet
	// next is where in readings the next reply's arming is likely to be:
	// replies come in the order of the reads, so finished looks there
	// first, and a batch of armings costs no walk of the others.
	next int
}

// find returns the index of call's arming in readings, looking from
// index from on, then before it; -1 when call is not there.
func (t *tracking) find(call *conn.Call, from int) int {
	from = min(max(from, 0), len(t.readings))
	for i := from; i < len(t.readings); i++ {
		if t.readings[i].call == call {
			return i
		}
	}
	for i := range from {
		if t.readings[i].call == call {
			return i
		}
	}
	return -1
}

// arming is one Track call under way.
type arming struct {
	call       *conn.Call
	keys       []string
	tag        uint64
	connection uint64 // tracking.connection when it was sent
	armed      bool   // its reply armed the keys (see finished)
}

// Track arms keys on server node: it sends request, a read-only command
// that reads every one of keys, on the node's subscription connection, and
// waits for its reply (request.Reply), at most Options.RequestTimeout or
// until ctx ends. Leave request and keys alone until it returns. From that
// reply on, the first change the server reports of each key goes to
// SubscribeOptions.OnInvalidate with tag, unless a later Track of the key
// on that node was answered first; a change reported before the reply goes
// with the tag of the arming it ended. On a Cluster the keys must
// share a slot; a master not dialled yet fails it with ErrNotConnected,
// and OnConnect follows once it tracks. Track returns nil once the keys
// are armed. Its errors: ErrTrackingUnavailable (also when OnInvalidate is
// nil), ErrNotConnected, ctx's, the transport's, or a *resp.ServerError.
func (s *Subscriber) Track(ctx context.Context, node int, request *Request, tag uint64, keys ...string) error {
	// Track does not allocate in steady state, but it is meant for the
	// subscription connections only, off the fast path.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mux: %s: %w", s.group.Address(node), err)
	}
	l, reading, err := s.sendTracking(node, request, tag, keys, time.Now().Add(s.group.options.RequestTimeout))
	if err != nil {
		return err
	}
	return s.awaitTracking(ctx, node, l, request, reading)
}

// Arming is one arming read of TrackAll: the arguments of a Track, and
// once TrackAll returned, its error.
type Arming struct {
	Request *Request
	Tag     uint64
	Keys    []string
	Err     error

	link    *link // the connection it was sent on
	reading int   // where its arming was put in the link's readings
}

// TrackAll is Track for each of armings on server node, their reads
// written in one go before their replies are awaited: many keys armed
// for the cost of a few writes. Each Arming's Err is what its Track would
// return. Leave the armings alone until it returns.
func (s *Subscriber) TrackAll(ctx context.Context, node int, armings []Arming) {
	deadline := time.Now().Add(s.group.options.RequestTimeout) // one for the reads written together
	for i := range armings {
		a := &armings[i]
		a.link, a.Err = nil, ctx.Err()
		if a.Err != nil {
			a.Err = fmt.Errorf("mux: %s: %w", s.group.Address(node), a.Err)
			continue
		}
		a.link, a.reading, a.Err = s.sendTracking(node, a.Request, a.Tag, a.Keys, deadline)
	}
	for i := range armings {
		if l := armings[i].link; l != nil {
			l.conn.Flush()
		}
	}
	for i := range armings {
		if a := &armings[i]; a.link != nil {
			a.Err = s.awaitTracking(ctx, node, a.link, a.Request, a.reading)
			a.link = nil
		}
	}
}

// sendTracking sends request, the read that arms keys with tag, on the
// link that tracks them on server node, with deadline, and returns that
// link and the index of the arming in its readings (a hint for
// awaitTracking).
func (s *Subscriber) sendTracking(node int, request *Request, tag uint64, keys []string, deadline time.Time) (*link, int, error) {
	sub := s.nodes[node]
	call := &request.call
	l := s.trackingLink(node, keys)
	sub.mu.Lock()
	if err := s.trackableLocked(node, l); err != nil {
		sub.mu.Unlock()
		return nil, 0, err
	}
	t := &l.tracking
	t.readings = append(t.readings, arming{call: call, keys: keys, tag: tag, connection: t.connection})
	reading := len(t.readings) - 1
	sub.mu.Unlock()

	l.conn.Send(call, deadline)
	return l, reading, nil
}

// awaitTracking waits for the reply of request, sent by sendTracking on
// link l of server node (its arming most likely at index reading), and
// returns nil when it armed the keys.
func (s *Subscriber) awaitTracking(ctx context.Context, node int, l *link, request *Request, reading int) error {
	sub := s.nodes[node]
	call := &request.call
	t := &l.tracking
	l.conn.Wait(ctx, call)

	sub.mu.Lock()
	armed := false
	if i := t.find(call, reading); i >= 0 {
		// Their order does not matter: the last takes its place, so
		// that TrackAll's many readings cost no shifting.
		armed = t.readings[i].armed
		last := len(t.readings) - 1
		t.readings[i] = t.readings[last]
		t.readings[last] = arming{}
		t.readings = t.readings[:last]
	}
	sub.mu.Unlock()
	switch {
	case armed:
		return nil
	case call.Abandoned():
		return fmt.Errorf("mux: %s: %w", s.group.Address(node), call.Err)
	case call.Err != nil:
		return call.Err
	case call.Reply.IsError():
		return fmt.Errorf("mux: %s: the tracking read failed: %w", s.group.Address(node), call.Reply.Err())
	default:
		return fmt.Errorf("mux: %s: %w: the subscription connection was replaced before the tracking read was answered", s.group.Address(node), ErrNotConnected)
	}
}

// trackingLink returns the link that tracks keys on server node: the
// server's, or for a cluster, the link to the master of the first
// key's slot, nil (after dialling it) when it has none yet.
func (s *Subscriber) trackingLink(node int, keys []string) *link {
	sub := s.nodes[node]
	if sub.shards == nil {
		return sub.link
	}
	slot := cluster.AnySlot
	if len(keys) > 0 {
		slot = cluster.SlotOf(keys[0])
	}
	if l := s.shardLink(node, slot); l != nil {
		return l.link
	}
	return nil
}

// trackableLocked returns why keys cannot be armed on server node's link
// l now, or nil. The caller holds the subscription's mutex.
func (s *Subscriber) trackableLocked(node int, l *link) error {
	sub := s.nodes[node]
	switch {
	case s.options.OnInvalidate == nil:
		return fmt.Errorf("%w: SubscribeOptions.OnInvalidate is nil", ErrTrackingUnavailable)
	case sub.trackingErr != nil:
		return sub.trackingErr
	case l == nil || l.tracking.state == trackingOff:
		return fmt.Errorf("mux: %s: %w: the subscription connection does not track yet", s.group.Address(node), ErrNotConnected)
	}
	return nil
}

// finished takes into account the end of a call on server node's
// subscription connection l: the reply to an arming read, if it is not an
// error and came on the connection the read was sent for, arms the read's
// keys with its tag. The Conn calls it (conn.Options.OnFinish) as soon as
// the call is over, before it handles any later push: the armings take
// effect in the order of the connection, whoever reads it.
func (s *Subscriber) finished(node int, l *link, call *conn.Call) {
	sub := s.nodes[node]
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if s.finishedRound(node, l, call) {
		return
	}
	t := &l.tracking
	i := t.find(call, t.next)
	if i < 0 {
		return
	}
	t.next = i + 1
	reading := &t.readings[i]
	reading.armed = armsLocked(sub, t, call, reading.connection)
	if reading.armed {
		for _, key := range reading.keys {
			t.armed.arm(key, reading.tag)
		}
	}
}

// armsLocked reports whether call, finished, arms its keys: its reply is
// not an error, and came on the connection it was sent for, which still
// tracks. The caller holds sub's mutex.
func armsLocked(sub *subscription, t *tracking, call *conn.Call, connection uint64) bool {
	return call.Err == nil && !call.Abandoned() && !call.Reply.IsError() &&
		connection == t.connection && t.state == trackingOn && sub.trackingErr == nil
}

// enableTracking turns tracking on for the fresh connection l of server
// node, when key tracking is wanted and the server can. It reports false
// when the connection failed meanwhile: it is then dialled again.
func (s *Subscriber) enableTracking(ctx context.Context, node int, l *link) bool {
	sub := s.nodes[node]
	if s.options.OnInvalidate == nil {
		return true
	}
	sub.mu.Lock()
	unavailable := sub.trackingErr != nil
	sub.mu.Unlock()
	if unavailable {
		return true // the subscriptions go on without it
	}
	call := &l.enable
	call.Reset()
	call.Command = resp.AppendCommand(call.Command, "CLIENT", "TRACKING", "ON", "NOLOOP")
	if l.conn.Do(ctx, call) != nil {
		return false
	}
	if call.Reply.IsError() {
		s.trackingUnavailable(node, fmt.Errorf("%w: %s refused CLIENT TRACKING: %w", ErrTrackingUnavailable, l.conn.Address(), call.Reply.Err()))
		return true
	}
	sub.mu.Lock()
	l.tracking.state = trackingOn
	sub.mu.Unlock()
	return true
}

// trackingUnavailable marks server node unable to track keys and reports
// it, once.
func (s *Subscriber) trackingUnavailable(node int, err error) {
	sub := s.nodes[node]
	sub.mu.Lock()
	first := sub.trackingErr == nil
	if first {
		sub.trackingErr = err
	}
	sub.mu.Unlock()
	if first && s.options.OnTrackingUnavailable != nil {
		s.options.OnTrackingUnavailable(node, err)
	}
}

// disconnected ends the tracking of l, a connection of server node, which
// Listen stopped reading because of err: the keys it armed are reported
// as InvalidatedDisconnected, unless the Subscriber is closing (ctx
// ended), and the armings still under way will not count.
func (s *Subscriber) disconnected(ctx context.Context, node int, l *link, err error) {
	if s.options.OnInvalidate == nil {
		return
	}
	sub := s.nodes[node]
	sub.mu.Lock()
	t := &l.tracking
	var reported []Invalidation
	if ctx.Err() == nil {
		reported = t.armed.disarmAll(make([]Invalidation, 0, t.armed.len()), node, InvalidatedDisconnected, err)
	}
	t.armed.clear()
	t.connection++
	t.state = trackingOff
	sub.mu.Unlock()
	for _, invalidation := range reported {
		s.options.OnInvalidate(invalidation)
	}
}
