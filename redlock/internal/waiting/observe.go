package waiting

// What the lock package's tests read of the room, to know when a waiter
// waits.

// ChannelState is what the room keeps of one release channel.
type ChannelState struct {
	Waiters       int  // the waiters on the channel
	Confirmations int  // the nodes that confirmed its subscription
	Idle          bool // nobody waits on it: its subscription is kept
}

// Channels returns the state of every channel the room keeps, by name.
func (n *Notifier) Channels() map[string]ChannelState {
	n.mu.Lock()
	defer n.mu.Unlock()
	channels := make(map[string]ChannelState, len(n.waiters))
	for name, waiters := range n.waiters {
		channels[name] = ChannelState{Waiters: len(waiters.list), Confirmations: waiters.confirmations, Idle: waiters.isIdle}
	}
	return channels
}

// Waiting returns the number of registered waiters.
func (n *Notifier) Waiting() int { return int(n.waiting.Load()) }

// Settled reports whether each of waiters listens for a release, with its
// subscriptions confirmed and no wake-up pending, all at one moment. A nil
// waiter (a lock with no wait state lent) does not.
func (n *Notifier) Settled(waiters ...*Waiter) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, w := range waiters {
		if w == nil || w.subscribing || !w.listening.Load() || len(w.notify) > 0 {
			return false
		}
	}
	return true
}

// LineIdentity returns w's identity in the line of a fair lock, and
// whether it has a place; a nil w has none.
func (n *Notifier) LineIdentity(w *Waiter) (string, bool) {
	if w == nil {
		return "", false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return string(w.lineID[:]), w.lined
}

// Listening reports whether w waits for a release now; a nil w does not.
func (w *Waiter) Listening() bool { return w != nil && w.listening.Load() }

// WakeUpPending reports whether a wake-up waits for w's next wait.
func (w *Waiter) WakeUpPending() bool { return w != nil && len(w.notify) > 0 }

// Look ends w's wait now, as an announced release does.
func (w *Waiter) Look() { w.wake(causeLook) }
