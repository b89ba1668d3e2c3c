package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/redlock/internal/round"
	"github.com/lockmux/lockmux/redlock/internal/waiting"
	"github.com/lockmux/lockmux/resp"
)

// releasedChannelPrefix starts the pub/sub channel on which the release
// script announces that a key is free; the key follows it.
const releasedChannelPrefix = naming.ReleasedChannelPrefix

// releaseChannelsRule is the ACL rule that lets a user publish and
// subscribe to the release channels.
const releaseChannelsRule = naming.ReleaseChannelsRule

// notificationFallback is how many retry delays a Lock that listens for a
// release waits at most (waiting.NotificationFallback).
const notificationFallback = waiting.NotificationFallback

// releaseIdentityLength is the length of the identity under which a
// release is announced: 16 hexadecimal digits of a random 64-bit number,
// drawn by each Unlock.
const releaseIdentityLength = round.IdentityLength

// newReleaseIdentity fills dst with a new release identity. It tells one
// release from another, also when holds repeat their token
// (MutexOptions.Token); it needs to be unique, not secret.
func newReleaseIdentity(dst *[releaseIdentityLength]byte) {
	const digits = "0123456789abcdef"
	random := rand.Uint64()
	for i := range dst {
		dst[i] = digits[random&15]
		random >>= 4
	}
}

// waitState is what a Lock keeps for its waits between two attempts. The
// Client lends it while the Lock runs (lendWait); it belongs to the
// goroutine that has the turn.
type waitState struct {
	waiting.Waiter

	// failed is the tally of the last failed attempt, and failedElapsed
	// its time: a Lock's error is made from them only when it returns.
	failed        round.Tally
	failedElapsed time.Duration
	line          fairLine // a fair Mutex's place in line while its Lock waits
}

// waitingLock is a Mutex as the waiting room sees it (waiting.Lock).
type waitingLock Mutex

// Kind returns the kind of the Mutex's holds.
func (l *waitingLock) Kind() waiting.Kind {
	switch l.kind {
	case round.KindWrite:
		return waiting.KindWrite
	case round.KindRead:
		return waiting.KindRead
	case round.KindFair:
		return waiting.KindFair
	}
	return waiting.KindPlain
}

// ReleasedChannels returns the Mutex's release channels.
func (l *waitingLock) ReleasedChannels() []string { return (*Mutex)(l).releasedChannels() }

// releasedChannels returns the channels on which the releases of the
// Mutex's keys are announced, one per key. The caller holds the
// notifier's mutex.
func (m *Mutex) releasedChannels() []string {
	if m.channels == nil {
		m.channels = make([]string, len(m.keys))
		for i, key := range m.keys {
			m.channels[i] = m.client.releasedChannel(key)
		}
	}
	return m.channels
}

// retryRule returns when the Mutex's Lock tries again.
func (m *Mutex) retryRule() waiting.Rule {
	return waiting.Rule{MaxTries: m.maxTries, DelayMin: m.retryDelayMin, DelayMax: m.retryDelayMax, Backoff: m.retryBackoff}
}

// retryDelay draws the retry delay after the failed attempt number of a
// Lock (from 1) (waiting.Rule.Delay).
func (m *Mutex) retryDelay(number int) time.Duration { return m.retryRule().Delay(number) }

// initNotifier readies the notifier of a Client whose nodes are known.
func (c *Client) initNotifier() {
	c.notifier.Init(waiting.Config{Nodes: len(c.addresses), Need: c.need, Sharded: c.hasCluster,
		Closed: c.closed.Load, Closing: c.closing, Subscribe: c.subscribe})
}

// subscribe makes the subscription connections of the notifier, one per
// node. Unless Options.Protocol is ProtocolRESP2, they also watch the keys
// of the renewed holds.
func (c *Client) subscribe() *mux.Subscriber {
	n := &c.notifier
	options := mux.SubscribeOptions{OnConnect: c.resubscribe, OnPush: n.Deliver, OnUnavailable: c.notificationsUnavailable}
	if c.options.Protocol != ProtocolRESP2 {
		options.OnInvalidate, options.OnTrackingUnavailable = c.watcher.invalidated, c.watcher.unavailable
	}
	return c.group.Subscribe(options)
}

// resubscribe tells the watcher, then the notifier, that node's
// subscription connection is new.
func (c *Client) resubscribe(node int) {
	c.watcher.reconnected(node)
	c.notifier.Resubscribe(node)
}

// notificationsUnavailable marks a node as unable to notify, for the life
// of the Client, and tells the observer once: it speaks only RESP2 (or
// Options.Protocol says so), or its ACL refused the release channels.
func (c *Client) notificationsUnavailable(node int, cause error) {
	err := fmt.Errorf("%w: %s: %w", ErrNotificationsUnavailable, c.addresses[node], cause)
	var refusal *resp.ServerError
	if errors.As(cause, &refusal) {
		if isConfigError(refusal.Message) {
			err = fmt.Errorf("%w: %w", ErrConfig, err)
		}
		err = fmt.Errorf("%w; allow the release channels to the user with the ACL rule %sPATTERN, with the pattern of the lock keys (%s for every key)",
			err, naming.ReleasedChannelPrefix, releaseChannelsRule)
	}
	if !c.notifier.Unavailable(node, err) {
		return
	}
	if observer := c.options.Observer; observer != nil {
		observer.OnNodeError(NodeErrorEvent{Operation: OperationSubscribe, Address: c.addresses[node], Outcome: OutcomeError, Err: err})
	}
}

// waiterIDLength is the length of a fair waiter's random hexadecimal id.
const waiterIDLength = waiting.WaiterIDLength

// fairLine is a fair Lock's place in line, owned by the goroutine that
// has the turn.
type fairLine struct {
	id        [waiterIDLength]byte
	heartbeat []byte // the heartbeat's TTL in milliseconds, in decimal
	extras    [2][]byte
}

// heartbeat returns a fair waiter's heartbeat TTL: until its next attempt
// is certainly due.
func (m *Mutex) heartbeat() time.Duration {
	return notificationFallback*m.retryDelayMax + 2*m.client.options.NodeTimeout
}

// joinLine puts a fair Lock's waiter in line in two rounds, as a fence is
// taken, so an earlier entry has the smaller ticket. It reports whether a
// quorum took the waiter, and fails when configuration refusals leave no
// quorum.
func (m *Mutex) joinLine(ctx context.Context, line *fairLine) (bool, error) {
	c := m.client
	a := &m.acquisition
	const digits = "0123456789abcdef"
	random := rand.Uint64()
	for i := range line.id {
		line.id[i] = digits[random&15]
		random >>= 4
	}
	line.heartbeat = strconv.AppendInt(line.heartbeat[:0], m.heartbeat().Milliseconds(), 10)
	r := m.acquisitionRound()
	m.start(r, round.FairTicket, line.id[:], 0, nil)
	if m.exchange(ctx, r) != nil || r.Tally.Got < c.need {
		return false, m.lineRefused()
	}
	var largest int64
	for _, node := range r.Tally.Nodes {
		if node.Outcome == round.OutcomeConfirmed {
			largest = max(largest, node.Number)
		}
	}
	line.extras = [2][]byte{line.id[:], line.heartbeat}
	a.extras = line.extras[:]
	m.start(r, round.FairEnqueue, line.id[:], largest+1, nil)
	if m.exchange(ctx, r) != nil || r.Tally.Got < c.need {
		err := m.lineRefused()
		m.leaveLine(line)
		return false, err
	}
	c.notifier.EnterLine(&m.waitState().Waiter, line.id)
	return true, nil
}

// lineRefused returns a joinLine round's error when configuration
// refusals leave no quorum.
func (m *Mutex) lineRefused() error {
	tally := &m.acquisitionRound().Tally
	if !tally.RefusedByConfiguration() {
		return nil
	}
	return quorumError(tally, m.key, m.client.addresses, 0)
}

// leaveLine takes the waiter out of line on every node, without waiting.
func (m *Mutex) leaveLine(line *fairLine) {
	a := &m.acquisition
	a.extras = nil
	m.client.notifier.LeaveLine(&m.waitState().Waiter)
	r := m.acquisitionRound()
	m.start(r, round.FairLeave, line.id[:], 0, nil)
	m.send(r)
}

// lendWait borrows a wait state for the Lock or Acquire of the goroutine
// that has the turn, readied for this Mutex.
func (m *Mutex) lendWait() *waitState {
	w := m.client.waits.Take()
	if w == nil {
		w = &waitState{}
	}
	w.Init(&m.client.notifier, (*waitingLock)(m))
	m.wait.Store(w)
	return w
}

// giveBackWait gives w back once the Retry that used it returned and it is
// out of line: nothing of it may be used afterwards. A fair Mutex's
// extras name its place in line (joinLine): they go too.
func (m *Mutex) giveBackWait(w *waitState) {
	m.wait.Store(nil)
	if m.kind == round.KindFair {
		m.acquisition.extras = nil
	}
	w.Detach()
	m.client.waits.Put(w)
}

// waitState returns the wait state lent to the Lock under way. The caller
// has the turn, within that Lock's Retry.
func (m *Mutex) waitState() *waitState { return m.wait.Load() }
