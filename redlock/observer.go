package redlock

import "time"

// Observer is told what a Client does: acquisitions, releases, extensions,
// losses and node errors, with their timings. Set it with Options.Observer;
// a nil Observer costs nothing. Its methods are called synchronously, on
// the goroutine of the operation, possibly from many goroutines at once.
// An Observer must be safe for concurrent use and fast; it must not block
// or call back into the Client. It may keep the events, passed by value.
type Observer interface {
	// OnAcquire is called after each acquisition attempt (one round to the
	// nodes), successful or not.
	OnAcquire(AcquireEvent)
	// OnRelease is called after each release.
	OnRelease(ReleaseEvent)
	// OnExtend is called after each extension attempt, explicit or
	// automatic.
	OnExtend(ExtendEvent)
	// OnLost is called once when a hold ends before its release: an
	// extension or a renewal could not confirm it in time, its validity
	// (less two node timeouts for a renewed hold) passed, the Client was
	// closed, or its validity ended before Lock or TryLock could return it.
	OnLost(LostEvent)
	// OnNodeError is called for each node that failed in a round: it
	// answered an error, did not answer in time, or the command was not
	// sent; and for each confirmation of a quarantined node, which did not
	// count. Refusals (held by another, missing) are not node errors. It is
	// also called once per node, with OperationSubscribe, when the node
	// turns out unable to carry release notifications (see
	// ErrNotificationsUnavailable).
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
	// Validity is how long the hold stays valid from the end of the
	// attempt; it is zero when the attempt failed.
	Validity time.Duration
	// Err is nil when the attempt won the lock, otherwise the attempt's
	// error (usually a *QuorumError). A hold won whose validity ends
	// before Lock or TryLock can return it is reported to OnLost.
	Err error
}

// ReleaseEvent describes one release.
type ReleaseEvent struct {
	// Key is the lock's key.
	Key string
	// Got is the number of nodes that confirmed the release, and Need the
	// quorum.
	Got, Need int
	// Elapsed is the time the release took.
	Elapsed time.Duration
	// Held is the time from the acquisition to the release.
	Held time.Duration
	// Err is nil when the release was confirmed on a quorum, otherwise its
	// error (matching ErrLockLost when the hold was already gone).
	Err error
}

// ExtendEvent describes one extension attempt.
type ExtendEvent struct {
	// Key is the lock's key.
	Key string
	// Automatic is set for an extension made by the renewal of a hold with
	// MutexOptions.AutoExtend.
	Automatic bool
	// Got is the number of nodes that confirmed, and Need the quorum.
	Got, Need int
	// Elapsed is the time the extension took.
	Elapsed time.Duration
	// Validity is how long the hold stays valid from the end of the
	// extension; it is zero when the extension failed.
	Validity time.Duration
	// Err is nil when the hold was extended, otherwise the error.
	Err error
}

// LostEvent describes a hold that ended before its release.
type LostEvent struct {
	// Key is the lock's key.
	Key string
	// Held is the time from the acquisition to the moment the loss was
	// found.
	Held time.Duration
	// Err is the cause: it matches ErrLockLost, and is usually a
	// *QuorumError of the failed extension.
	Err error
}

// NodeErrorEvent describes one node's failure in a round, or a node that
// cannot carry release notifications (OperationSubscribe).
type NodeErrorEvent struct {
	// Key is the lock's key; it is empty for OperationSubscribe, which
	// concerns the notifications of every key.
	Key string
	// Operation is the step of the round, or OperationSubscribe.
	Operation Operation
	// Address is the node's address as configured.
	Address string
	// Outcome is OutcomeError, OutcomeTimeout, OutcomeNotSent or
	// OutcomeQuarantined.
	Outcome Outcome
	// Latency is the time from sending the command to its reply, or to the
	// moment the client gave up waiting; zero for OperationSubscribe.
	Latency time.Duration
	// Err is the server's error reply or the transport error. For
	// OperationSubscribe it matches ErrNotificationsUnavailable and says
	// why.
	Err error
}

// NopObserver is an Observer that does nothing. Embed it in a type to
// implement only the methods of interest.
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
