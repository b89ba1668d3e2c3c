package redlock

import (
	"time"
)

// Observer is told of a Client's acquisitions, releases, extensions,
// losses and node errors. It is called on the operation's goroutine, so
// it must be fast, safe for concurrent use, and not call the Client.
type Observer interface {
	// OnAcquire is called after each acquisition attempt.
	OnAcquire(AcquireEvent)
	// OnRelease is called after each release.
	OnRelease(ReleaseEvent)
	// OnExtend is called after each extension attempt.
	OnExtend(ExtendEvent)
	// OnLost is called once when a hold ends before its release
	// (docs/renewal.md).
	OnLost(LostEvent)
	// OnNodeError is called for each node that failed in a round or was
	// quarantined, and once per node that cannot notify. Refusals are not
	// node errors.
	OnNodeError(NodeErrorEvent)
}

// AcquireEvent describes one acquisition attempt.
type AcquireEvent struct {
	// Key is the lock's key.
	Key string
	// Attempt counts the attempts of one Lock call, from 1.
	Attempt int
	// Got is the number of nodes that confirmed, and Need the quorum.
	Got, Need int
	// Elapsed is the time the attempt took.
	Elapsed time.Duration
	// Validity is the hold's validity left after the attempt; zero on
	// failure.
	Validity time.Duration
	// Err is nil when the attempt won, else usually a *QuorumError.
	Err error
}

// ReleaseEvent describes one release.
type ReleaseEvent struct {
	// Key is the lock's key.
	Key string
	// Got is the number of nodes that confirmed, and Need the quorum.
	Got, Need int
	// Elapsed is the time the release took.
	Elapsed time.Duration
	// Held is the time from the acquisition to the release.
	Held time.Duration
	// Err is nil when a quorum confirmed, else matches ErrLockLost.
	Err error
}

// ExtendEvent describes one extension attempt.
type ExtendEvent struct {
	// Key is the lock's key.
	Key string
	// Automatic is set for a renewal (MutexOptions.AutoExtend).
	Automatic bool
	// Got is the number of nodes that confirmed, and Need the quorum.
	Got, Need int
	// Elapsed is the time the extension took.
	Elapsed time.Duration
	// Validity is the hold's validity left after it; zero on failure.
	Validity time.Duration
	// Err is nil when the hold was extended, otherwise the error.
	Err error
}

// LostEvent describes a hold that ended before its release.
type LostEvent struct {
	// Key is the lock's key.
	Key string
	// Held is the time from the acquisition to the loss.
	Held time.Duration
	// Err is the cause; it matches ErrLockLost.
	Err error
}

// NodeErrorEvent describes one node's failure in a round, or a node that
// cannot notify (OperationSubscribe).
type NodeErrorEvent struct {
	// Key is the lock's key; empty for OperationSubscribe.
	Key string
	// Operation is the step of the round, or OperationSubscribe.
	Operation Operation
	// Address is the node's address as configured.
	Address string
	// Outcome is OutcomeError, OutcomeTimeout, OutcomeNotSent or
	// OutcomeQuarantined.
	Outcome Outcome
	// Latency is the time from the send to the reply or the give-up.
	Latency time.Duration
	// Err is the error reply or transport error. For OperationSubscribe
	// it matches ErrNotificationsUnavailable.
	Err error
}

// NopObserver does nothing. Embed it to implement only some methods.
type NopObserver struct{}

// OnAcquire does nothing.
func (NopObserver) OnAcquire(AcquireEvent) {}

// OnRelease does nothing.
func (NopObserver) OnRelease(ReleaseEvent) {}

// OnExtend does nothing.
func (NopObserver) OnExtend(ExtendEvent) {}

// OnLost does nothing.
func (NopObserver) OnLost(LostEvent) {}

// OnNodeError does nothing.
func (NopObserver) OnNodeError(NodeErrorEvent) {}

// Observers returns an Observer that tells each of observers of every
// event, in order, without allocating. Nil observers are skipped; it
// returns nil when none is left, and the observer itself when one is.
func Observers(observers ...Observer) Observer {
	var list observerList
	for _, observer := range observers {
		switch observer := observer.(type) {
		case nil:
		case observerList:
			list = append(list, observer...)
		default:
			list = append(list, observer)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

// observerList is the Observer made by Observers; it is never changed.
type observerList []Observer

// OnAcquire tells each observer.
func (l observerList) OnAcquire(event AcquireEvent) {
	for _, observer := range l {
		observer.OnAcquire(event)
	}
}

// OnRelease tells each observer.
func (l observerList) OnRelease(event ReleaseEvent) {
	for _, observer := range l {
		observer.OnRelease(event)
	}
}

// OnExtend tells each observer.
func (l observerList) OnExtend(event ExtendEvent) {
	for _, observer := range l {
		observer.OnExtend(event)
	}
}

// OnLost tells each observer.
func (l observerList) OnLost(event LostEvent) {
	for _, observer := range l {
		observer.OnLost(event)
	}
}

// OnNodeError tells each observer.
func (l observerList) OnNodeError(event NodeErrorEvent) {
	for _, observer := range l {
		observer.OnNodeError(event)
	}
}
