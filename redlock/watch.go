package redlock

import (
	"errors"
	"fmt"
	"sync"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/liveness"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/resp"
)

// watchLua is the read that arms a renewed hold's keys. It goes with EVAL:
// the subscription connections load no scripts.
var watchLua = protocol.Watch

// watcher watches the keys of the renewed holds of a Client (AutoExtend,
// Client.Do), so that a key cut short or deleted from outside is noticed
// at once, not at the next renewal: see liveness.Watcher, which keeps the
// holds' keys and arms them. The arming read also tells whether the key
// was still whole when it was armed: a change between the write and the
// arming sends nothing.
//
// A change from outside, a flush, and the end of a subscription
// connection make the hold renew at once (Mutex.renewNow): a quorum
// that confirms the extension restores the keys; otherwise the renewal
// ends in the hold's loss, as it would have later. A node that cannot
// track (RESP2, or an ACL without client|tracking) is reported once and
// left to the renewal's schedule.
type watcher struct {
	liveness.Watcher[*livenessLock]
	client *Client

	mu sync.Mutex
	// observations are the Observes under way (election_observe.go),
	// woken by the changes of their keys.
	observations map[*observation]bool
}

// init prepares the watcher of c.
func (w *watcher) init(c *Client) {
	w.client = c
	w.Init(len(c.dialAddresses), c.options.clock, c.notifier.TrackingSubscriber, func(node int, err error) {
		var refusal *resp.ServerError
		if errors.As(err, &refusal) && isConfigError(refusal.Message) {
			w.refused(node, err)
		}
	})
}

// Keys returns the Mutex's keys.
func (l *livenessLock) Keys() []string { return l.keys }

// RenewNow renews the hold of the given generation at once.
func (l *livenessLock) RenewNow(generation uint64) { (*Mutex)(l).renewNow(generation) }

// watched reports whether the holds of m are watched: renewed holds, when
// the nodes may speak RESP3, but a read/write lock's readers.
func (m *Mutex) watched() bool {
	// A reader's entry is a member of a sorted set, which the arming read
	// cannot read: it is renewed on schedule.
	return m.options.AutoExtend && m.client.options.Protocol != ProtocolRESP2 && m.kind != kindRead
}

// watch lists the keys of m's hold, which starts, and makes sure the
// subscription connections are there to track them.
func (w *watcher) watch(m *Mutex) {
	w.client.notifier.StartTracking()
	w.Watch((*livenessLock)(m))
	w.report()
}

// forget unlists the keys of m's hold, which ends.
func (w *watcher) forget(m *Mutex) { w.Forget((*livenessLock)(m)) }

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
	w.Invalidated(invalidation.Key, invalidation.Tag)
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
// (see liveness.Watcher.Arm): its keys are not watched there.
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
	w.Cannot(node, err)
	w.report()
}

// report tells the observer of the nodes that cannot watch keys, each
// once, if a hold is watched.
func (w *watcher) report() {
	c := w.client
	nodes, reasons := w.Unreported()
	observer := c.options.Observer
	if observer == nil {
		return
	}
	for i, node := range nodes {
		observer.OnNodeError(NodeErrorEvent{Operation: OperationSubscribe, Address: c.addresses[node], Outcome: OutcomeError, Err: reasons[i]})
	}
}

// reconnected arms again, on node's new subscription connection, the keys
// of every watched hold that node confirmed: the former connection's
// arming ended with it (and was reported, see invalidated).
func (w *watcher) reconnected(node int) {
	w.client.quarantine.WatchMarker(node)
	w.wakeObservations("")
	for l := range w.Watching() {
		h := &l.hold
		h.Mu.Lock()
		generation, tag, armed := h.Generation, h.WatchTag, h.Held && !h.Lost && !h.Writing && h.Watching[node]
		h.Mu.Unlock()
		if armed {
			w.StartArming(l, generation, tag, node)
		}
	}
}

// allNodes asks startArming to arm every node the hold has.
const allNodes = liveness.AllNodes

// startArming arms the keys of the hold of the given generation under
// tag, on node or on allNodes, on a goroutine of its own.
func (m *Mutex) startArming(generation, tag uint64, node int) {
	m.client.watcher.StartArming((*livenessLock)(m), generation, tag, node)
}

// arm arms the keys of the hold of the given generation under tag, on
// node or on allNodes (liveness.Watcher.Arm).
func (m *Mutex) arm(generation, tag uint64, node int) {
	m.client.watcher.Arm((*livenessLock)(m), generation, tag, node)
}
