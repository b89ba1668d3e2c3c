package redlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/resp"
)

// watchLua is the read that arms a renewed hold's keys. It goes with EVAL:
// the subscription connections load no scripts.
var watchLua = protocol.Watch

// watcher watches the keys of the renewed holds of a Client (AutoExtend,
// Client.Do), so that a key cut short or deleted from outside is noticed
// at once, not at the next renewal: on RESP3 nodes, each node's
// subscription connection tracks keys (mux.Subscriber.Track), and the
// nodes report the first change of each armed key.
//
// The hold's own writes change its keys too, and must not count. Each own
// write (the acquisition, every extension) gets a new tag, set in the hold
// before the write is sent; once the write succeeded, the keys are armed
// again on the nodes the hold has, under that tag, by a read sent after
// the write was answered (Mutex.arm). A node reports the change of a key
// with the tag of the last arming it answered before the change, so the
// change made by an own write carries an older tag than the hold's and is
// passed over, and a change from outside carries the hold's tag. The
// arming read also tells whether the key was still whole when it was
// armed: a change between the write and the arming sends nothing.
//
// A change from outside, a flush, and the end of a subscription
// connection make the hold renew at once (Mutex.renewNow): a quorum
// that confirms the extension restores the keys; otherwise the renewal
// ends in the hold's loss, as it would have later. A node that cannot
// track (RESP2, or an ACL without client|tracking) is reported once and
// left to the renewal's schedule.
type watcher struct {
	client *Client
	tags   atomic.Uint64
	ctx    context.Context // ends with the Client
	cancel context.CancelFunc
	// arming counts the armings under way. startArming adds to it and
	// close waits for it under armingMu, once ctx ended: no arming starts
	// while close waits.
	arming   sync.WaitGroup
	armingMu sync.Mutex

	mu    sync.Mutex
	holds map[string]*Mutex // key → the Mutex whose renewed hold watches it
	// cannot says, per node, why it cannot watch keys (nil when it can),
	// and reported whether the observer was told.
	cannot   []error
	reported []bool
	// observations are the Observes under way (election_observe.go),
	// woken by the changes of their keys.
	observations map[*observation]bool
	// spares are the renewer's arming batches done with (see armBatch).
	spares []*armingBatch
}

// init prepares the watcher of c.
func (w *watcher) init(c *Client) {
	w.client = c
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.holds = make(map[string]*Mutex)
	w.cannot = make([]error, len(c.dialAddresses))
	w.reported = make([]bool, len(c.dialAddresses))
}

// watched reports whether the holds of m are watched: renewed holds, when
// the nodes may speak RESP3, but a read/write lock's readers.
func (m *Mutex) watched() bool {
	// A reader's entry is a member of a sorted set, which the arming read
	// cannot read: it is renewed on schedule.
	return m.options.AutoExtend && m.client.options.Protocol != ProtocolRESP2 && m.kind != kindRead
}

// newWriteTag returns the tag of an own write of a watched hold. The
// caller stores it in the hold before the write is sent.
func (w *watcher) newWriteTag() uint64 { return w.tags.Add(1) }

// watch lists the keys of m's hold, which starts, and makes sure the
// subscription connections are there to track them.
func (w *watcher) watch(m *Mutex) {
	w.client.notifier.StartTracking()
	w.mu.Lock()
	for _, key := range m.keys {
		w.holds[key] = m
	}
	w.mu.Unlock()
	w.report()
}

// forget unlists the keys of m's hold, which ends: their changes, the
// release's first, no longer count.
func (w *watcher) forget(m *Mutex) {
	w.mu.Lock()
	for _, key := range m.keys {
		if w.holds[key] == m {
			delete(w.holds, key)
		}
	}
	w.mu.Unlock()
}

// invalidated handles a key that a node reported changed, flushed, or no
// longer tracked: the hold that watches it renews at once, unless the
// report is older than the hold's last own write. It runs on a
// subscription connection's goroutine and must not block.
func (w *watcher) invalidated(invalidation mux.Invalidation) {
	if quarantine.IsEpochKey(invalidation.Key) {
		// The marker changed or was flushed: the node's verdict is read
		// again before its next vote. A watch that ended changes nothing
		// for a plain node, whose every vote is judged by the marker read
		// after it; a Redis Cluster node's verdict is read again.
		q := w.client.quarantine
		if q != nil && (invalidation.Cause != mux.InvalidatedDisconnected || w.client.group.IsCluster(invalidation.Node)) {
			q.Connected(invalidation.Node)
		}
		return
	}
	if invalidation.Cause == mux.InvalidatedKey {
		w.wakeObservations(invalidation.Key)
	} else {
		w.wakeObservations("")
	}
	w.mu.Lock()
	m := w.holds[invalidation.Key]
	w.mu.Unlock()
	if m == nil {
		return
	}
	h := &m.hold
	h.Mu.Lock()
	current := h.Held && !h.Lost && h.WatchTag == invalidation.Tag
	generation := h.Generation
	h.Mu.Unlock()
	if current {
		m.renewNow(generation)
	}
}

// unavailable notes a node that cannot track keys though it carries
// subscriptions (an ACL without client|tracking): the holds are renewed on
// their schedule there, without watching. It is reported once, when a hold
// is watched (see cannotWatch).
func (w *watcher) unavailable(node int, cause error) {
	if errors.Is(cause, mux.ErrPushUnavailable) {
		return // the node can carry no subscription at all: Client.notificationsUnavailable reported it
	}
	advice := "allow key tracking to the user with the ACL rule +client|tracking"
	w.cannotWatch(node, cause, advice)
}

// refused notes a node whose ACL refused the read that arms a hold's keys
// (see Mutex.arm): its keys are not watched there.
func (w *watcher) refused(node int, cause error) {
	advice := "allow the read that arms the keys to the user with the ACL rule +eval +get +pttl"
	w.cannotWatch(node, cause, advice)
}

// cannotWatch keeps why node cannot watch the keys of renewed holds, and
// tells the observer once per node, as soon as a hold is watched: a Client
// that renews no hold watches nothing, and has nothing to report.
func (w *watcher) cannotWatch(node int, cause error, advice string) {
	c := w.client
	err := fmt.Errorf("%w: %s: the keys of renewed holds are not watched: %w", ErrNotificationsUnavailable, c.addresses[node], cause)
	var refusal *resp.ServerError
	if errors.As(cause, &refusal) {
		if isConfigError(refusal.Message) {
			err = fmt.Errorf("%w: %w", ErrConfig, err)
		}
		err = fmt.Errorf("%w; %s", err, advice)
	}
	w.mu.Lock()
	if w.cannot[node] == nil {
		w.cannot[node] = err
	}
	w.mu.Unlock()
	w.report()
}

// report tells the observer of the nodes that cannot watch keys, each
// once, if a hold is watched.
func (w *watcher) report() {
	c := w.client
	var nodes []int
	w.mu.Lock()
	if len(w.holds) > 0 {
		for node, err := range w.cannot {
			if err != nil && !w.reported[node] {
				w.reported[node] = true
				nodes = append(nodes, node)
			}
		}
	}
	w.mu.Unlock()
	observer := c.options.Observer
	if observer == nil {
		return
	}
	for _, node := range nodes {
		address, err := c.addresses[node], w.cannot[node] // written once, before reported was set
		observer.OnNodeError(NodeErrorEvent{Operation: OperationSubscribe, Address: address, Outcome: OutcomeError, Err: err})
	}
}

// close ends the armings under way and waits for them.
func (w *watcher) close() {
	w.armingMu.Lock()
	w.cancel()
	w.armingMu.Unlock()
	w.arming.Wait()
}

// reconnected arms again, on node's new subscription connection, the keys
// of every watched hold that node confirmed: the former connection's
// arming ended with it (and was reported, see invalidated).
func (w *watcher) reconnected(node int) {
	w.client.quarantine.WatchMarker(node)
	w.wakeObservations("")
	w.mu.Lock()
	mutexes := make(map[*Mutex]bool, len(w.holds))
	for _, m := range w.holds {
		mutexes[m] = true
	}
	w.mu.Unlock()
	for m := range mutexes {
		h := &m.hold
		h.Mu.Lock()
		generation, tag, armed := h.Generation, h.WatchTag, h.Held && !h.Lost && !h.Writing && h.Watching[node]
		h.Mu.Unlock()
		if armed {
			m.startArming(generation, tag, node)
		}
	}
}

// allNodes asks startArming to arm every node the hold has.
const allNodes = -1

// startArming arms the keys of the hold of the given generation under
// tag, on node or on allNodes, on a goroutine of its own: a round trip to
// each node, which no caller waits for.
func (m *Mutex) startArming(generation, tag uint64, node int) {
	w := &m.client.watcher
	w.armingMu.Lock()
	defer w.armingMu.Unlock()
	if w.ctx.Err() != nil {
		return
	}
	w.arming.Go(func() { m.arm(generation, tag, node) })
}

// arm arms the hold's keys on each node the hold has (or on only, unless
// it is allNodes), under tag, and
// checks what the read saw: every key with the hold's token and a TTL no
// shorter than the validity left. A key found cut short or gone, on a
// node whose arming is current, makes the hold renew at once. Nothing is
// armed once a newer own write of the hold, or its end, made tag stale.
func (m *Mutex) arm(generation, tag uint64, only int) {
	c := m.client
	subscriber := c.notifier.TrackingSubscriber()
	if subscriber == nil {
		return
	}
	request := mux.NewRequest()
	request.SetEval(watchLua, len(m.keys), 0)
	for _, key := range m.keys {
		request.AppendString(key)
	}
	h := &m.hold
	for node := range c.addresses {
		if only != allNodes && node != only {
			continue
		}
		h.Mu.Lock()
		current := h.CurrentLocked(generation) && !h.Lost && h.WatchTag == tag && !h.Writing
		had := current && h.Watching[node]
		token := bytes.Clone(h.Token)
		h.Mu.Unlock()
		if !current {
			return
		}
		if !had {
			continue
		}
		if err := subscriber.Track(c.watcher.ctx, node, request, tag, m.keys...); err != nil {
			var refusal *resp.ServerError
			if errors.As(err, &refusal) && isConfigError(refusal.Message) {
				c.watcher.refused(node, err)
			}
			continue // not armed: the renewal's schedule watches this node
		}
		now := c.options.clock.Now()
		h.Mu.Lock()
		current = h.CurrentLocked(generation) && !h.Lost && h.WatchTag == tag
		left := h.Until.Sub(now)
		h.Mu.Unlock()
		if current && !whole(request.Reply(), token, left) {
			m.renewNow(generation)
			return
		}
	}
}

// whole reports whether the reply of watchLua shows every key with token
// and a remaining TTL no shorter than left, the validity the hold has.
func whole(reply resp.Value, token []byte, left time.Duration) bool {
	if reply.Type != resp.TypeArray || len(reply.Elems)%2 != 0 {
		return false
	}
	for i := 0; i < len(reply.Elems); i += 2 {
		value, ttl := reply.Elems[i], reply.Elems[i+1]
		if value.Null || !bytes.Equal(value.Str, token) || ttl.Type != resp.TypeInteger {
			return false
		}
		if time.Duration(ttl.Int)*time.Millisecond < left {
			return false
		}
	}
	return true
}
