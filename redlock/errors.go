package redlock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockmux/lockmux/resp"
)

var (
	// ErrNotAcquired is matched by the error of a lock attempt, or of a
	// resumption, that did not win a quorum: another holder has the lock, or
	// too few nodes answered in time.
	ErrNotAcquired = errors.New("redlock: lock not acquired")

	// ErrLockLost is matched when a hold can no longer be proven: an unlock,
	// an extension or a renewal did not reach a quorum of nodes that still
	// held the token, or the validity ran out first. It is also the cause of
	// a lock-scoped context that was cancelled because the hold ended.
	ErrLockLost = errors.New("redlock: lock lost")

	// ErrClosed is returned for calls on a Client, or on a Mutex of a
	// Client, that was closed, and by the Locks that were waiting when it
	// was closed. The cause of Client.Do's context, when Close ended the
	// hold, matches it too.
	ErrClosed = errors.New("redlock: client closed")

	// ErrReleaseUnconfirmed is matched by the node errors reported for a
	// release that the transport kept sending after Unlock returned (a node
	// that was slow, stalled or reconnecting) and could not confirm before
	// its key's TTL certainly ended or the Client was closed; and by the
	// error of Close when there were any. The key on that node ends with
	// its TTL.
	ErrReleaseUnconfirmed = errors.New("redlock: release not confirmed by a node")

	// ErrQuorumUnreachable is matched when so many nodes failed (errors,
	// timeouts, connections down) that a quorum was not possible, whatever
	// the remaining nodes answered. A *QuorumError with that outcome matches
	// both ErrQuorumUnreachable and ErrNotAcquired or ErrLockLost, as its
	// operation dictates.
	ErrQuorumUnreachable = errors.New("redlock: quorum unreachable")

	// ErrNodeUnreachable is matched by a node's error when the transport
	// failed it: no connection (OutcomeNotSent), no reply in time
	// (OutcomeTimeout, which also matches os.ErrDeadlineExceeded), or a
	// connection that failed during the round, closed, reset or broken by
	// a reply that is not valid RESP (OutcomeError). A node's error reply
	// does not match it. Use errors.Is on a *QuorumError, a *NodeResult or
	// a NodeErrorEvent's Err; no transport package need be imported.
	ErrNodeUnreachable = errors.New("redlock: node unreachable")

	// ErrInvalidOptions is wrapped by the errors of option validation. Their
	// message names the field at fault.
	ErrInvalidOptions = errors.New("redlock: invalid options")

	// ErrDuplicateNode is matched when two configured addresses reach the
	// same server (the same run_id): it would count twice in a quorum.
	ErrDuplicateNode = errors.New("redlock: two addresses reach the same server")

	// ErrNotHeld is returned by Unlock and Extend on a Mutex that is not
	// held.
	ErrNotHeld = errors.New("redlock: mutex not held")

	// ErrQuarantined is matched by the error of a node whose vote did not
	// count because, with Options.Quarantine, it may have lost keys: its
	// epoch marker is younger than Options.MaxTTL and its drift allowance,
	// or was not read since the node connected.
	ErrQuarantined = errors.New("redlock: node quarantined")

	// ErrWouldDeadlock is returned by an RWMutex's Lock and TryLock while
	// its own read hold is held, and by its RLock and TryRLock while its
	// own write hold is held: the RWMutex's own hold would refuse the call
	// until it ends. A read hold is not upgraded (two readers upgrading at
	// once would each wait for the other to leave): RUnlock, then Lock. A
	// write hold turns into a read hold with Downgrade.
	ErrWouldDeadlock = errors.New("redlock: the read/write lock's own hold would refuse this call")

	// errHeldLocally is returned by TryLock while another goroutine of
	// this process holds the Mutex or is acquiring it.
	errHeldLocally = fmt.Errorf("%w: held by another goroutine of this process", ErrNotAcquired)

	// errMaxHold is returned by Extend when the hold has lasted
	// MutexOptions.MaxHold.
	errMaxHold = fmt.Errorf("%w: the hold reached MutexOptions.MaxHold", ErrLockLost)

	// errAttemptFailed reports that an attempt ran and did not win a quorum;
	// the details are in the acquisition round's tally.
	errAttemptFailed = errors.New("redlock: attempt failed")

	// errNotAwaited is the error of a node whose reply was not awaited because
	// the round was already decided. Its outcome is unknown.
	errNotAwaited = errors.New("redlock: reply not awaited: the round was already decided")

	// errUnexpectedReply is wrapped for replies no version of the scripts gives.
	errUnexpectedReply = errors.New("redlock: unexpected reply")

	// errClientClosed ends the holds of a Client that is closed: nothing
	// renews them or watches their validity any more. It matches
	// ErrLockLost and ErrClosed.
	errClientClosed = fmt.Errorf("%w: %w", ErrLockLost, ErrClosed)

	// ErrConfig is matched when a node answered with an error that points at
	// its configuration rather than at a passing failure: NOAUTH, WRONGPASS,
	// NOPERM, WRONGTYPE, READONLY, or a cluster answer (MOVED, ASK,
	// CLUSTERDOWN, CROSSSLOT). Such errors are not retried. TRYAGAIN, a
	// slot being migrated, is a passing failure.
	ErrConfig = errors.New("redlock: node configuration error")

	// ErrFenceCounter is matched when a node's fencing counter for a lock
	// key (KEY:lockmux-fence) is not a decimal integer from 0 to 2^63−2,
	// the largest that has a next fence. It also matches ErrConfig: the
	// node's vote does not count and it keeps no lock key. docs/fencing.md
	// says how to fix the counter. fencedstore.Store.Set fails with it when
	// its newest fence is not a decimal integer from 0 to 2^63−1.
	ErrFenceCounter = fmt.Errorf("%w: bad fencing counter", ErrConfig)

	// ErrNoLeader is matched by the error of Election.Leader when no
	// candidate leads the election on a quorum of nodes.
	ErrNoLeader = errors.New("redlock: election has no leader")

	// ErrNotificationsUnavailable is matched by the error of a
	// NodeErrorEvent with OperationSubscribe: the node cannot announce
	// releases to waiting Locks. It speaks only RESP2, Options.Protocol is
	// ProtocolRESP2, or its ACL refuses the release channels (the error then
	// matches ErrConfig too). It is reported once per node and Client
	// (docs/waiting.md). A node whose ACL refuses client|tracking is
	// reported the same way: it cannot watch renewed holds' keys.
	ErrNotificationsUnavailable = errors.New("redlock: release notifications unavailable")
)

// isConfigError reports whether a server's error reply (such as
// "WRONGPASS invalid username-password pair") is a configuration problem
// that retrying cannot fix. Errors with these replies should match
// ErrConfig. They are told by their code (the first word), and, for the
// refusals of an ACL to a command that a script calls, which have the
// code ERR, by their message: "The user executing the script can't …" up
// to Redis 7.0, "ACL failure in script: …" from 7.2.
func isConfigError(reply string) bool {
	switch string(resp.ErrorCode([]byte(reply))) {
	case "NOAUTH", "WRONGPASS", "NOPERM", "WRONGTYPE", "READONLY",
		"MOVED", "ASK", "CLUSTERDOWN", "CROSSSLOT":
		return true
	case "ERR":
		return strings.Contains(reply, "The user executing the script can't") || strings.Contains(reply, "ACL failure in script")
	}
	return false
}

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
	// OperationSubscribe is a node's subscription to the release
	// notifications that wake waiting Locks. It is reported only in a
	// NodeErrorEvent, once per node, when the node cannot notify.
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

// failure returns the words that say this operation failed, as used in
// QuorumError messages.
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
	// OutcomeConfirmed means the node confirmed the operation: the key was
	// set, extended or released.
	OutcomeConfirmed Outcome = iota
	// OutcomeHeld means the key is held by another token.
	OutcomeHeld
	// OutcomeMissing means the key is missing or has expired.
	OutcomeMissing
	// OutcomeError means the node answered with an error.
	OutcomeError
	// OutcomeTimeout means the node did not answer in time. The command may
	// still have been applied, so its effect is unknown.
	OutcomeTimeout
	// OutcomeNotSent means the command was not sent, because the node was
	// down or reconnecting. It had no effect.
	OutcomeNotSent
	// OutcomeQuarantined means the node confirmed, but its vote did not
	// count: with Options.Quarantine, it may have lost keys (see
	// ErrQuarantined).
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

// NodeResult is one node's part in an operation: its outcome, the error it
// answered or the transport error, and how long it took.
type NodeResult struct {
	// Address is the node's address as configured.
	Address string
	// Outcome is what the node answered.
	Outcome Outcome
	// Err is the server's error reply or the transport error, when there
	// was one. It is nil for the outcomes confirmed, held and missing.
	Err error
	// Latency is the time from sending the command to its reply, or to the
	// moment the client gave up waiting.
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

// QuorumError reports an operation that did not reach a quorum of nodes.
// It matches ErrNotAcquired (lock, resume) or ErrLockLost (extend, unlock)
// through errors.Is, and ErrQuorumUnreachable when Unreachable is set. It
// unwraps to the node errors that carry an error, so that errors.Is and
// errors.As also see what the nodes answered.
type QuorumError struct {
	// Operation is the step that failed.
	Operation Operation
	// Key is the lock's key.
	Key string
	// Got is the number of nodes that confirmed, and Need the quorum.
	Got, Need int
	// Nodes holds one entry per node, in the order of the configured
	// addresses.
	Nodes []NodeResult
	// Elapsed is the time the operation took, from its first send to its
	// last reply or timeout.
	Elapsed time.Duration
	// Unreachable is set when too many nodes failed for a quorum to be
	// possible.
	Unreachable bool
}

// Error returns a message that names the key, the counts and every node
// that did not confirm, for example:
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

// Is reports whether target is ErrNotAcquired for a lock or a resumption,
// ErrLockLost for an extension or an unlock, or ErrQuorumUnreachable when
// the quorum was unreachable.
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

// Unwrap returns a *NodeResult for each node whose entry carries an error,
// so that errors.Is and errors.As reach the nodes' errors.
func (e *QuorumError) Unwrap() []error {
	var errs []error
	for i := range e.Nodes {
		if e.Nodes[i].Err != nil {
			errs = append(errs, &e.Nodes[i])
		}
	}
	return errs
}
