package mux

import "github.com/lockmux/lockmux/conn"

// A tracked round (Round.TrackOn) is sent, on each server whose
// subscription connection tracks keys, over that connection: its reply
// arms the round's keys there, and the connection's own writes report no
// change (CLIENT TRACKING NOLOOP). A command that writes keys and then
// reads them, run on the connection that tracks them, leaves them armed
// with no invalidation of its own write and no read of its own, and a
// change from outside after it is reported after its reply, in the order
// of the connection: what a write and an arming read on two connections
// cannot promise together.

// roundArmings are the armings of tracked rounds on one link, in the
// order they were sent: replies come in that order, so the one a reply
// finishes is most often the first.
type roundArmings struct {
	queue []arming // from head on; a nil call was taken out of order
	head  int
}

// add adds the arming of call, sent next on the link.
func (r *roundArmings) add(a arming) { r.queue = append(r.queue, a) }

// take removes call's arming and returns it; false when it is not there.
func (r *roundArmings) take(call *conn.Call) (arming, bool) {
	for i := r.head; i < len(r.queue); i++ {
		if r.queue[i].call != call {
			continue
		}
		a := r.queue[i]
		r.queue[i] = arming{} // taken: the head passes it
		for r.head < len(r.queue) && r.queue[r.head].call == nil {
			r.head++
		}
		if r.head == len(r.queue) {
			r.queue, r.head = r.queue[:0], 0
		}
		return a, true
	}
	return arming{}, false
}

// TrackOn makes the next Send go over s's subscription connection on
// each server whose connection tracks keys (see Subscriber.Track),
// instead of the server's own: the reply arms keys there with tag, and
// Wait waits for every server's reply, counting each, even once tally
// decided, until shortly before its deadline. The command must read each
// of keys after any write of them: a connection's own write reports no
// change, but leaves the key unarmed. Servers whose connection does not track now (a Redis
// Cluster, a connection being dialled) are sent the command as usual;
// Tracked tells which were not. Leave keys alone until Wait returns.
func (r *Round) TrackOn(s *Subscriber, tag uint64, keys []string) {
	if r.trackedOn == nil {
		r.trackedOn = make([]*link, len(r.calls))
	}
	r.tracker, r.trackTag, r.trackKeys = s, tag, keys
}

// Tracked reports whether the last Send went to server node over a
// subscription connection, its reply arming the keys of TrackOn.
func (r *Round) Tracked(node int) bool { return r.trackedOn != nil && r.trackedOn[node] != nil }

// tracked reports whether the last Send went over a subscription
// connection to any server.
func (r *Round) tracked() bool {
	for _, l := range r.trackedOn {
		if l != nil {
			return true
		}
	}
	return false
}

// sendsOn returns where the round's call to server node goes: the
// tracking connection of the last Send, or the Group's node.
func (g *Group) sendsOn(round *Round, i int) node {
	if round.trackedOn != nil {
		if l := round.trackedOn[i]; l != nil {
			return l.conn
		}
	}
	return g.nodes[i]
}

// trackRound readies call, about to be sent to server node, as an
// arming of keys with tag on the node's subscription connection, and
// returns that link; nil when the connection does not track now.
func (s *Subscriber) trackRound(node int, call *conn.Call, tag uint64, keys []string) *link {
	sub := s.nodes[node]
	l := sub.link
	if l == nil || !l.ready.Load() {
		return nil // a Redis Cluster, a server unavailable, a connection not tracking yet
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if s.trackableLocked(node, l) != nil {
		return nil
	}
	t := &l.tracking
	t.rounds.add(arming{call: call, keys: keys, tag: tag, connection: t.connection})
	return l
}

// finishedRound is finished for a call of a tracked round: its reply, if
// it is not an error and came on the connection it was sent for, arms
// its keys. It reports false when call is not a tracked round's. The
// caller holds the subscription's mutex.
func (s *Subscriber) finishedRound(node int, l *link, call *conn.Call) bool {
	t := &l.tracking
	a, ok := t.rounds.take(call)
	if !ok {
		return false
	}
	if armsLocked(s.nodes[node], t, call, a.connection) {
		for _, key := range a.keys {
			t.armed.arm(key, a.tag)
		}
	}
	return true
}

// Flush writes the commands of tracked rounds that Group.Queue left in
// the subscription connections' buffers.
func (s *Subscriber) Flush() {
	for _, sub := range s.nodes {
		if l := sub.link; l != nil {
			l.conn.Flush()
		}
	}
}
