package redlock

import (
	"context"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/liveness"
)

// renewer extends the AutoExtend holds of a Client: the room's schedule
// (liveness.Renewer), and the rounds of its batches. Each hold's
// extension goes on a round of the renewer's, and the batch's commands
// are written to each node at once.
type renewer struct {
	liveness.Renewer[*livenessLock]
	client *Client

	// extenders are the rounds of a batch, made as the batches grow and
	// reused, and arming the armings of the batch's watched holds (see
	// armBatch): they belong to the renewer's goroutine.
	extenders []*extender
	arming    *liveness.ArmingBatch[*livenessLock]
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
	for i, event := range sent {
		(*Mutex)(event.Lock).finishRenewal(event, r.extenders[i])
	}
	r.startArmingBatch()
}

// armLater adds the arming of m's hold of the given generation, under
// tag, to the batch being filled. It runs on the renewer's goroutine.
func (r *renewer) armLater(m *Mutex, generation, tag uint64) {
	if r.arming == nil {
		r.arming = r.client.watcher.SpareBatch()
	}
	r.arming.Add((*livenessLock)(m), generation, tag)
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
