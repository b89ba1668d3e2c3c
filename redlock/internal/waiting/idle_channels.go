package waiting

// IdleChannelsKept is the most release channels nobody waits on that a
// Notifier stays subscribed to, by default (Notifier.IdleLimit): a Lock that waits for the same key again
// finds its subscription made and confirmed, and waits without a
// SUBSCRIBE, an UNSUBSCRIBE or their allocations. Beyond it, the channel
// idle the longest is unsubscribed. A subscription costs its node a few
// hundred bytes.
const IdleChannelsKept = 128

// idleChannels is the list of the channels nobody waits on, whose
// subscriptions are kept, the oldest first. It is linked through the
// channels, so that a channel leaves it and joins it again without
// allocating. It is guarded by Notifier.mu.
type idleChannels struct {
	first, last *channelWaiters
	count       int
}

// add appends waiters, whose last waiter just left, to the list.
func (l *idleChannels) add(waiters *channelWaiters) {
	waiters.isIdle = true
	waiters.idlePrevious, waiters.idleNext = l.last, nil
	if l.last != nil {
		l.last.idleNext = waiters
	} else {
		l.first = waiters
	}
	l.last = waiters
	l.count++
}

// remove takes waiters, which is in the list, out of it.
func (l *idleChannels) remove(waiters *channelWaiters) {
	if waiters.idlePrevious != nil {
		waiters.idlePrevious.idleNext = waiters.idleNext
	} else {
		l.first = waiters.idleNext
	}
	if waiters.idleNext != nil {
		waiters.idleNext.idlePrevious = waiters.idlePrevious
	} else {
		l.last = waiters.idlePrevious
	}
	waiters.idlePrevious, waiters.idleNext, waiters.isIdle = nil, nil, false
	l.count--
}
