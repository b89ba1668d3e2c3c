package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/liveness"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/redlock/internal/round"
	"github.com/lockmux/lockmux/resp"
)

// livenessLock is a Mutex as the liveness room sees it (liveness.Lock).
type livenessLock Mutex

// Hold returns the Mutex's hold.
func (l *livenessLock) Hold() *liveness.Hold { return &l.hold }

// LossMargin returns how long before the end of its validity the end of a
// hold is signalled: two node timeouts for a renewed hold, so that its
// holder gets one to stop while the hold is still exclusive. A hold that
// nobody renews ends with its validity.
func (l *livenessLock) LossMargin() time.Duration {
	if !l.autoExtend {
		return 0
	}
	return 2 * l.client.options.NodeTimeout
}

// EndCame signals the end of the hold of the given generation.
func (l *livenessLock) EndCame(generation uint64) {
	m := (*Mutex)(l)
	if m.autoExtend {
		m.signalLost(generation, fmt.Errorf("%w: %q was not renewed %v before its validity ends", ErrLockLost, m.key, l.LossMargin()))
		return
	}
	m.signalLost(generation, fmt.Errorf("%w: the validity of %q passed", ErrLockLost, m.key))
}

// lossMargin is livenessLock.LossMargin.
func (m *Mutex) lossMargin() time.Duration { return (*livenessLock)(m).LossMargin() }

// Keys returns the Mutex's keys.
func (l *livenessLock) Keys() []string { return l.keys }

// RenewNow renews the hold of the given generation at once.
func (l *livenessLock) RenewNow(generation uint64) { (*Mutex)(l).renewNow(generation) }

// renewer extends the AutoExtend holds of a Client: the room's schedule
// (liveness.Renewer), and the rounds of its batches. Each hold's
// extension goes on a round of the renewer's, and the batch's commands
// are written to each node at once.
type renewer struct {
	liveness.Renewer[*livenessLock]
	client *Client

	// extenders are the rounds of a batch, made as the batches grow and
	// reused, arming the armings of the batch's watched holds (see
	// liveness.ArmingBatch), and unsure the buffer of one hold's unsure
	// nodes (see unsureNodes): they belong to the renewer's goroutine.
	extenders []*extender
	arming    *liveness.ArmingBatch[*livenessLock]
	unsure    []bool
}

// maxRenewalBatch bounds the extensions the renewer sends at once.
const maxRenewalBatch = liveness.MaxRenewalBatch

// renewalEarly is liveness.RenewalEarly.
func renewalEarly(ttl time.Duration) time.Duration { return liveness.RenewalEarly(ttl) }

// init readies the renewer of c.
func (r *renewer) init(c *Client) {
	r.client = c
	r.Init(c.options.clock, &c.closed, r.serve)
}

// scheduleRenewal schedules event. After Close it ends the event's hold
// at once: no renewal would come for it any more.
func (m *Mutex) scheduleRenewal(event liveness.Renewal[*livenessLock]) {
	if !m.client.renewer.Schedule(event) {
		// Outside the renewer's mutex: the loss reaches the observer and
		// Do's context.
		m.signalLost(event.Generation, errClientClosed)
	}
}

// renewNow schedules the renewal of m's hold of the given generation for
// now, in place of the one scheduled: its watcher saw a key change (see
// watcher). The renewal schedules the next one as usual.
func (m *Mutex) renewNow(generation uint64) {
	if !m.client.renewer.RenewNow((*livenessLock)(m), generation) {
		m.signalLost(generation, errClientClosed)
	}
}

// serve sends the extensions that came due at once, each on a round of
// its own, writes them to each node together, then gathers their replies.
func (r *renewer) serve(due []liveness.Renewal[*livenessLock]) {
	sent := due[:0]
	for _, event := range due {
		m := (*Mutex)(event.Lock)
		if event.Stale() {
			continue // a later renewal replaced it (renewNow)
		}
		x := r.extender(len(sent))
		// An extension that cannot be sent means the hold ended
		// (ErrNotHeld), expired, reached MaxHold or its Client closed:
		// nothing more to renew. The timer of the hold's end ends it, a
		// loss margin before its validity, or Client.Close did.
		if e, err := m.sendExtension(x, event.Generation, 0); err == nil {
			x.inFlight = e
			sent = append(sent, event)
		}
	}
	if len(sent) == 0 {
		return
	}
	r.client.group.Flush()
	if s := r.client.notifier.TrackingSubscriber(); s != nil {
		s.Flush() // the watched holds' extensions (see watcher)
	}
	for i, event := range sent {
		(*Mutex)(event.Lock).finishRenewal(event, r.extenders[i])
	}
	r.startArmingBatch()
}

// armLater adds the arming of m's hold of the given generation, under
// tag, to the batch being filled, after the extension counted by tally.
// It runs on the renewer's goroutine.
func (r *renewer) armLater(m *Mutex, generation, tag uint64, tally *round.Tally) {
	if r.arming == nil {
		r.arming = r.client.watcher.SpareBatch()
	}
	r.unsure = unsureNodes(tally, r.unsure)
	r.arming.Add((*livenessLock)(m), generation, tag, r.unsure)
}

// watchNodesLocked sets which nodes m's hold watches after its own write
// counted by tally: those that confirmed it. The nodes whose reply was
// not awaited, once a quorum had decided the round, are armed too and
// watched once their arming read shows the keys (see unsureNodes and
// liveness.Watcher.Arm): with three nodes, the third reply is most often
// not awaited, and left out, its node would never be watched. A node that
// refused the write or failed is not watched. The caller holds
// m.hold.Mu.
func (m *Mutex) watchNodesLocked(tally *round.Tally) {
	for i, node := range tally.Nodes {
		m.hold.Watching[i] = node.Outcome == round.OutcomeConfirmed
	}
}

// unsureNodes returns, in buffer, which nodes of the round counted by
// tally have a reply that was not awaited: the nodes whose arming read
// tells whether they hold the keys. It returns nil when every reply was
// awaited.
func unsureNodes(tally *round.Tally, buffer []bool) []bool {
	unsure := buffer[:0]
	some := false
	for _, node := range tally.Nodes {
		unsure = append(unsure, notAwaited(node))
		some = some || notAwaited(node)
	}
	if !some {
		return nil
	}
	return unsure
}

// armedByExtension reports whether the extension round r armed the
// keys on every node it was sent to: it went over each node's
// subscription connection (mux.Round.TrackOn), whose reply arms them, and
// each reply was awaited. Otherwise the nodes are armed by a read after
// the extension.
func armedByExtension(r *round.Round) bool {
	for i, node := range r.Tally.Nodes {
		if r.Mux.Sent(i) && (!r.Mux.Tracked(i) || notAwaited(node)) {
			return false
		}
	}
	return true
}

// notAwaited reports whether node's reply was not awaited: the round was
// decided, or its caller gave up, before it came.
func notAwaited(node round.NodeOutcome) bool {
	return node.Outcome == round.OutcomeTimeout && node.Err == round.ErrNotAwaited
}

// startArmingBatch arms the batch filled so far, if any, on a goroutine
// of its own.
func (r *renewer) startArmingBatch() {
	if batch := r.arming; batch != nil {
		r.arming = nil
		r.client.watcher.StartBatch(batch)
	}
}

// extender returns the i-th extender of a batch, made on first use.
func (r *renewer) extender(i int) *extender {
	if i == len(r.extenders) {
		r.extenders = append(r.extenders, &extender{batched: true})
	}
	return r.extenders[i]
}

// finishRenewal gathers the replies of an automatic extension and
// schedules the next one (see nextRenewal), sooner after a failure, at the
// retry delay, as long as an attempt can still finish before the hold's end
// is signalled. When none can, the hold is lost now, before its timer
// fires, so that its holder stops as early as possible.
func (m *Mutex) finishRenewal(event liveness.Renewal[*livenessLock], x *extender) {
	generation, e := event.Generation, x.inFlight
	m.gather(context.Background(), x.round)
	err := m.applyExtension(e, x.round, true)
	c := m.client
	now := c.options.clock.Now()
	h := &m.hold
	h.Mu.Lock()
	current, until, ttl := h.CurrentLocked(generation) && !h.Lost, h.Until, h.TTL
	h.Mu.Unlock()
	if !current {
		return
	}
	var due time.Time
	var early time.Duration
	switch {
	case err == nil && e.ttl < ttl:
		// MaxHold cut this extension short: it was the last one, and the
		// timer of the hold's end ends it.
		return
	case err == nil:
		due, early = m.nextRenewal(now, until, ttl), renewalEarly(ttl)
	default:
		latest := m.latestRenewal(until)
		if latest.Before(now) {
			m.signalLost(generation, err)
			return
		}
		due = now.Add(m.retryDelay(1))
		if latest.Before(due) {
			due = latest
		}
	}
	if event.Stale() {
		return // a renewal scheduled meanwhile (renewNow) stands
	}
	m.scheduleRenewal(liveness.Renewal[*livenessLock]{Lock: (*livenessLock)(m), Generation: generation, Due: due, Early: early})
}

// nextRenewal returns when the next automatic extension of a hold valid
// until the given moment is due, by the Client's clock: a third of the TTL
// after now, or sooner when the validity left is short (a resumed hold),
// so that an extension that takes a whole node timeout still finishes
// before the hold's end is signalled. It may be now.
func (m *Mutex) nextRenewal(now, until time.Time, ttl time.Duration) time.Time {
	due := now.Add(ttl / 3)
	if latest := m.latestRenewal(until); latest.Before(due) {
		return latest
	}
	return due
}

// latestRenewal is the last moment at which an extension of a hold valid
// until the given moment can start and, taking a whole node timeout,
// finish before the hold's end is signalled, a loss margin before until.
func (m *Mutex) latestRenewal(until time.Time) time.Time {
	return until.Add(-m.lossMargin() - m.client.options.NodeTimeout)
}

// watchLua is the read that arms a renewed hold's keys. It goes with EVAL:
// the subscription connections load no scripts.
var watchLua = protocol.Watch

// watcher watches the keys of the renewed holds of a Client (AutoExtend,
// Client.Do), so that a key cut short or deleted from outside is noticed
// at once, not at the next renewal: see liveness.Watcher, which keeps the
// holds' keys and arms them. An extension arms them by its reply (see
// armedByExtension); a read arms them after an acquisition, a
// reconnection, or an extension that could not, and tells whether the
// key was still whole: a change between the write and the read sends
// nothing.
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

// watched reports whether the holds of m are watched: renewed holds, when
// the nodes may speak RESP3, but a read/write lock's readers.
func (m *Mutex) watched() bool {
	// A reader's entry is a member of a sorted set, which the arming read
	// cannot read: it is renewed on schedule.
	return m.autoExtend && m.client.options.Protocol != ProtocolRESP2 && m.kind != round.KindRead
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
	w.Invalidated(invalidation.Node, invalidation.Key, invalidation.Tag)
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
// of every watched hold (liveness.Watcher.Reconnected), and reads the
// quarantine's marker and the observed elections' keys again there.
func (w *watcher) reconnected(node int) {
	w.client.quarantine.WatchMarker(node)
	w.wakeObservations("")
	w.Reconnected(node)
}

// allNodes asks startArming to arm every node the hold has.
const allNodes = liveness.AllNodes

// startArming arms the keys of the hold of the given generation under
// tag, on node or on allNodes, on a goroutine of its own; unsure is as
// liveness.Watcher.Arm takes it.
func (m *Mutex) startArming(generation, tag uint64, node int, unsure []bool) {
	m.client.watcher.StartArming((*livenessLock)(m), generation, tag, node, unsure)
}

// arm arms the keys of the hold of the given generation under tag, on
// node or on allNodes (liveness.Watcher.Arm), the nodes the hold watches.
func (m *Mutex) arm(generation, tag uint64, node int) {
	m.client.watcher.Arm((*livenessLock)(m), generation, tag, node, nil)
}
