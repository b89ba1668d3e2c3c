package redlock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/round"
)

var (
	// ErrNotAcquired is matched by a lock attempt or resumption that did
	// not win a quorum.
	ErrNotAcquired = errors.New("redlock: lock not acquired")

	// ErrLockLost is matched when an unlock, extension or renewal could not
	// prove the hold on a quorum in time. It is also the cause of a
	// lock-scoped context ended by the hold's end.
	ErrLockLost = errors.New("redlock: lock lost")

	// ErrClosed is returned by calls on a closed Client or its Mutexes,
	// and by the Locks waiting when it closed.
	ErrClosed = errors.New("redlock: client closed")

	// ErrReleaseUnconfirmed is matched by the node error of a release that
	// a node never confirmed after Unlock returned, and by Close's error
	// when one was left. That key ends with its TTL (docs/errors.md).
	ErrReleaseUnconfirmed = errors.New("redlock: release not confirmed by a node")

	// ErrQuorumUnreachable is matched when too many nodes failed for a
	// quorum to be possible. The error also matches ErrNotAcquired or
	// ErrLockLost, as its operation dictates.
	ErrQuorumUnreachable = errors.New("redlock: quorum unreachable")

	// ErrNodeUnreachable is matched by a node's error when the transport
	// failed it: no connection, no reply in time, or a broken connection.
	// A timeout also matches os.ErrDeadlineExceeded. A node's error reply
	// does not match it.
	ErrNodeUnreachable = round.ErrNodeUnreachable

	// ErrInvalidOptions is wrapped by option validation errors, which name
	// the field at fault.
	ErrInvalidOptions = errors.New("redlock: invalid options")

	// ErrDuplicateNode is matched when two addresses reach the same server
	// (run_id), which would vote twice.
	ErrDuplicateNode = errors.New("redlock: two addresses reach the same server")

	// ErrNotHeld is returned by Unlock and Extend on a Mutex not held.
	ErrNotHeld = errors.New("redlock: mutex not held")

	// ErrQuarantined is matched by the error of a node whose vote did not
	// count because it may have lost keys (Options.Quarantine).
	ErrQuarantined = errors.New("redlock: node quarantined")

	// ErrWouldDeadlock is returned by an RWMutex's write lock calls while
	// it holds a read hold, and by its read lock calls while it holds the
	// write hold. To upgrade, RUnlock and then Lock.
	ErrWouldDeadlock = errors.New("redlock: the read/write lock's own hold would refuse this call")

	// errHeldLocally: another goroutine holds or is acquiring the Mutex.
	errHeldLocally = fmt.Errorf("%w: held by another goroutine of this process", ErrNotAcquired)

	errMaxHold = fmt.Errorf("%w: the hold reached MutexOptions.MaxHold", ErrLockLost)

	// errAttemptFailed: no quorum; the round's tally has the details.
	errAttemptFailed = errors.New("redlock: attempt failed")

	// errNotAwaited: a node's reply came after its round was decided.
	errNotAwaited = round.ErrNotAwaited

	errUnexpectedReply = round.ErrUnexpectedReply

	errClientClosed = fmt.Errorf("%w: %w", ErrLockLost, ErrClosed)

	// ErrConfig is matched by a node error that retrying cannot fix:
	// NOAUTH, WRONGPASS, NOPERM, WRONGTYPE, READONLY, MOVED, ASK,
	// CLUSTERDOWN or CROSSSLOT.
	ErrConfig = round.ErrConfig

	// ErrFenceCounter is matched when a node's fencing counter is not a
	// decimal integer from 0 to 2^63−2; that vote fails. It matches
	// ErrConfig (docs/fencing.md).
	ErrFenceCounter = round.ErrFenceCounter

	// ErrNoLeader is matched by Election.Leader when no candidate leads on
	// a quorum.
	ErrNoLeader = errors.New("redlock: election has no leader")

	// ErrNotificationsUnavailable is matched by a NodeErrorEvent with
	// OperationSubscribe: the node cannot announce releases or watch keys.
	// It is reported once per node (docs/waiting.md).
	ErrNotificationsUnavailable = errors.New("redlock: release notifications unavailable")
)

// isConfigError reports whether a server's error reply should match
// ErrConfig (round.IsConfigError).
func isConfigError(reply string) bool { return round.IsConfigError(reply) }

// Operation names the step of the algorithm that a QuorumError or a
// NodeErrorEvent reports.
type Operation uint8

// The operations of a hold.
const (
	// OperationLock is an acquisition attempt.
	OperationLock Operation = iota
	// OperationExtend is an extension of a hold, explicit or automatic.
	OperationExtend
	// OperationUnlock is the release of a hold.
	OperationUnlock
	// OperationResume is the re-validation of a hold by its token.
	OperationResume
	// OperationSubscribe is a node's subscription to release
	// notifications, reported only in a NodeErrorEvent.
	OperationSubscribe
)

// String returns the operation's name: "lock", "extend", "unlock",
// "resume" or "subscribe".
func (o Operation) String() string {
	switch o {
	case OperationLock:
		return "lock"
	case OperationExtend:
		return "extend"
	case OperationUnlock:
		return "unlock"
	case OperationResume:
		return "resume"
	case OperationSubscribe:
		return "subscribe"
	}
	return "Operation(" + strconv.Itoa(int(o)) + ")"
}

// failure returns "not acquired" and the like, for QuorumError.
func (o Operation) failure() string {
	switch o {
	case OperationLock:
		return "not acquired"
	case OperationExtend:
		return "not extended"
	case OperationUnlock:
		return "not released"
	case OperationResume:
		return "not resumed"
	case OperationSubscribe:
		return "not subscribed"
	}
	return o.String() + " failed"
}

// Outcome is what one node answered to one operation.
type Outcome uint8

// The outcomes of one node.
const (
	// OutcomeConfirmed means the key was set, extended or released.
	OutcomeConfirmed Outcome = iota
	// OutcomeHeld means the key is held by another token.
	OutcomeHeld
	// OutcomeMissing means the key is missing or has expired.
	OutcomeMissing
	// OutcomeError means the node answered with an error.
	OutcomeError
	// OutcomeTimeout means no answer in time; the effect is unknown.
	OutcomeTimeout
	// OutcomeNotSent means the node was down, so nothing was sent.
	OutcomeNotSent
	// OutcomeQuarantined means the node confirmed but its vote did not
	// count (ErrQuarantined).
	OutcomeQuarantined
)

// String returns the outcome's short name: "confirmed", "held", "missing",
// "error", "timeout", "not sent" or "quarantined".
func (o Outcome) String() string {
	switch o {
	case OutcomeConfirmed:
		return "confirmed"
	case OutcomeHeld:
		return "held"
	case OutcomeMissing:
		return "missing"
	case OutcomeError:
		return "error"
	case OutcomeTimeout:
		return "timeout"
	case OutcomeNotSent:
		return "not sent"
	case OutcomeQuarantined:
		return "quarantined"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// NodeResult is one node's part in an operation.
type NodeResult struct {
	// Address is the node's address as configured.
	Address string
	// Outcome is what the node answered.
	Outcome Outcome
	// Err is the error reply or transport error; nil when confirmed, held
	// or missing.
	Err error
	// Latency is the time from the send to the reply or the give-up.
	Latency time.Duration
}

// Error returns "redlock: node ADDRESS: DESCRIPTION", for example
// "redlock: node 127.0.0.1:6379: timeout after 50ms".
func (e *NodeResult) Error() string {
	var b strings.Builder
	b.WriteString("redlock: node ")
	e.describe(&b)
	return b.String()
}

// Unwrap returns Err.
func (e *NodeResult) Unwrap() error { return e.Err }

// describe writes "ADDRESS: DESCRIPTION" to b.
func (e *NodeResult) describe(b *strings.Builder) {
	b.WriteString(e.Address)
	b.WriteString(": ")
	switch e.Outcome {
	case OutcomeConfirmed:
		b.WriteString("confirmed")
	case OutcomeHeld:
		b.WriteString("held by another")
	case OutcomeMissing:
		b.WriteString("missing or expired")
	case OutcomeTimeout:
		b.WriteString("timeout after ")
		b.WriteString(e.Latency.Round(time.Microsecond).String())
	case OutcomeNotSent:
		b.WriteString("not sent")
		if e.Err != nil {
			b.WriteString(": ")
			b.WriteString(e.Err.Error())
		}
	default:
		if e.Err != nil {
			b.WriteString(e.Err.Error())
		} else {
			b.WriteString(e.Outcome.String())
		}
	}
}

// QuorumError reports an operation that did not reach a quorum. It
// matches ErrNotAcquired (lock, resume) or ErrLockLost (extend, unlock),
// ErrQuorumUnreachable when Unreachable, and unwraps to the node errors.
type QuorumError struct {
	// Operation is the step that failed.
	Operation Operation
	// Key is the lock's key.
	Key string
	// Got is the number of nodes that confirmed, and Need the quorum.
	Got, Need int
	// Nodes holds one entry per node, in the addresses' order.
	Nodes []NodeResult
	// Elapsed is the time from the first send to the last reply.
	Elapsed time.Duration
	// Unreachable is set when too many nodes failed for a quorum.
	Unreachable bool
}

// Error names the key, the counts and every node that did not confirm:
//
//	redlock: lock "orders:1" not acquired: 2 of 5 nodes, need 3 (127.0.0.1:1: held by another; 127.0.0.1:2: timeout after 50ms; 127.0.0.1:3: missing or expired)
func (e *QuorumError) Error() string {
	var b strings.Builder
	b.WriteString("redlock: lock ")
	b.WriteString(strconv.Quote(e.Key))
	b.WriteByte(' ')
	b.WriteString(e.Operation.failure())
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(e.Got))
	b.WriteString(" of ")
	b.WriteString(strconv.Itoa(len(e.Nodes)))
	b.WriteString(" nodes, need ")
	b.WriteString(strconv.Itoa(e.Need))
	if e.Unreachable {
		b.WriteString(", quorum unreachable")
	}
	first := true
	for i := range e.Nodes {
		node := &e.Nodes[i]
		if node.Outcome == OutcomeConfirmed {
			continue
		}
		if first {
			b.WriteString(" (")
			first = false
		} else {
			b.WriteString("; ")
		}
		node.describe(&b)
	}
	if !first {
		b.WriteByte(')')
	}
	return b.String()
}

// Is matches the sentinels named in QuorumError's doc.
func (e *QuorumError) Is(target error) bool {
	switch target {
	case ErrNotAcquired:
		return e.Operation == OperationLock || e.Operation == OperationResume
	case ErrLockLost:
		return e.Operation == OperationExtend || e.Operation == OperationUnlock
	case ErrQuorumUnreachable:
		return e.Unreachable
	}
	return false
}

// Unwrap returns a *NodeResult for each node with an error.
func (e *QuorumError) Unwrap() []error {
	var errs []error
	for i := range e.Nodes {
		if e.Nodes[i].Err != nil {
			errs = append(errs, &e.Nodes[i])
		}
	}
	return errs
}

// keptFailure is the failure of an attempt that an acquisition which
// waits keeps, so that it makes the error only if it returns it: an
// attempt that fails and is retried allocates nothing.
type keptFailure struct {
	cause   error       // the failure, or nil when it is the tally's
	tally   round.Tally // the failed round's tally, while cause is nil
	key     string
	elapsed time.Duration
}

// errFailureKept is returned in place of an attempt's failure when the
// failure was kept (keptFailure): the caller makes the error from it
// when it returns one. It never reaches a user.
var errFailureKept = fmt.Errorf("%w: the failure is kept", ErrNotAcquired)

// keep keeps the failure of m's attempt, whose details are in its
// acquisition round's tally, which the caller reads with m's turn.
func (f *keptFailure) keep(m *Mutex, elapsed time.Duration) {
	f.cause, f.key, f.elapsed = nil, m.key, elapsed
	f.tally.CopyFrom(&m.acquisitionRound().Tally)
}

// err returns the failure kept.
func (f *keptFailure) err(addresses []string) error {
	if f.cause != nil {
		return f.cause
	}
	return quorumError(&f.tally, f.key, addresses, f.elapsed)
}
