package redlock

import (
	"bytes"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/decimal"
	"github.com/lockmux/lockmux/resp"
)

// nodeOperation is one command of the protocol between a Mutex and a node.
// The protocol table says, for each, how it is written and what its
// replies mean; a round (round.go) writes any of them and counts any of
// their replies the same way.
type nodeOperation uint8

const (
	// nodeAcquire sets one key: SET key token NX PX ttl.
	nodeAcquire nodeOperation = iota
	// nodeAcquireWaiting sets one key as nodeAcquire does, and tells how
	// long the key lives when it exists: the attempts of a Lock that
	// waits.
	nodeAcquireWaiting
	// nodeAcquireMulti sets several keys, all or nothing.
	nodeAcquireMulti
	// nodeAcquireFenced sets the keys and reads their fencing counters.
	nodeAcquireFenced
	// nodeCommitFence raises the keys' counters to the hold's fence.
	nodeCommitFence
	// nodeRelease deletes the keys that hold the token and announces the
	// release under an identity.
	nodeRelease
	// nodeQuietRelease deletes the keys that hold the token and announces
	// nothing: the clean-up after a failed attempt.
	nodeQuietRelease
	// nodeExtend sets the TTL of every key that holds the token.
	nodeExtend
	// nodeRepair sets the keys again on a node that lost them.
	nodeRepair
	// nodeCheck tells whether the keys hold the token, to resume a hold.
	nodeCheck

	// The commands of a read/write lock's holds that differ from a plain
	// hold's (see RWMutex and commandsOf): the writer's acquisition, with
	// and without fencing, and the reader's every command.
	nodeAcquireWrite
	nodeAcquireWriteFenced
	nodeAcquireRead
	nodeReleaseRead
	nodeQuietReleaseRead
	nodeExtendRead
	nodeRepairRead
	nodeCheckRead

	// The commands of a fair lock (MutexOptions.Fair): its acquisition,
	// which only the first waiter in line passes, and the two rounds that
	// put a waiter in line, and the one that takes it out.
	nodeAcquireFair
	nodeAcquireFairFenced
	nodeReleaseFair
	nodeFairTicket
	nodeFairEnqueue
	nodeFairLeave

	// nodeForceRelease deletes a lock key whoever holds it (see
	// Client.ForceRelease).
	nodeForceRelease

	// The commands of a Semaphore's one-round acquisition, over its
	// candidate slots (acquisition.candidates): set the first free one,
	// with and without fencing, and release whichever of them a node set
	// with the token.
	nodeAcquirePermit
	nodeAcquirePermitFenced
	nodeQuietReleasePermits

	// nodeOperations counts the commands.
	nodeOperations
)

// lockKind is what a Mutex's holds are: a plain lock, or a read/write
// lock's writer or reader (see RWMutex).
type lockKind uint8

const (
	kindPlain lockKind = iota
	kindWrite
	kindRead
	kindFair
	lockKinds
)

// commandsOf maps, for each kind, the command a plain hold uses for a step
// (acquire, release, extend…) to the one the kind uses. Every operation
// names the plain command, and Mutex.start maps it.
var commandsOf = func() [lockKinds][nodeOperations]nodeOperation {
	var table [lockKinds][nodeOperations]nodeOperation
	for kind := range table {
		for command := range nodeOperations {
			table[kind][command] = command
		}
	}
	write, read := &table[kindWrite], &table[kindRead]
	write[nodeAcquire], write[nodeAcquireWaiting], write[nodeAcquireFenced] = nodeAcquireWrite, nodeAcquireWrite, nodeAcquireWriteFenced
	read[nodeAcquire], read[nodeAcquireWaiting] = nodeAcquireRead, nodeAcquireRead
	read[nodeRelease], read[nodeQuietRelease] = nodeReleaseRead, nodeQuietReleaseRead
	read[nodeExtend], read[nodeRepair], read[nodeCheck] = nodeExtendRead, nodeRepairRead, nodeCheckRead
	fair := &table[kindFair]
	fair[nodeAcquire], fair[nodeAcquireWaiting], fair[nodeRelease] = nodeAcquireFair, nodeAcquireFair, nodeReleaseFair
	fair[nodeAcquireFenced] = nodeAcquireFairFenced
	return table
}()

// argumentKind is what follows the token in a command.
type argumentKind uint8

const (
	argumentNone     argumentKind = iota
	argumentNumber                // a TTL or a fence, in decimal
	argumentIdentity              // a release identity, which may be absent
)

// nodeCommand is one row of the protocol table.
type nodeCommand struct {
	// operation is the operation the command serves, as users see it.
	operation Operation
	// script is the command's script; nil for the plain SET.
	script *mux.Script
	// eval sends the script whole with EVAL, never EVALSHA: nobody may be
	// there to answer NOSCRIPT, because the reply is carried (released by
	// the transport, see mux.Round.Carry) or not awaited.
	eval bool
	// carried marks a release: the transport finishes it whoever waits.
	carried bool
	// delivered marks an acquisition: it reaches a node whose connection
	// is being dialled even when the round was decided without it (see
	// mux.Round.Deliver), so that a hold lives on every node it can. It
	// makes the node hold the keys, never the client count its vote; a
	// release sent later is queued behind it. EVALSHA suits it: the dial
	// that writes it has just loaded the scripts.
	delivered bool
	// announce marks a command whose script announces the release it
	// makes, given an identity (the Mutex's token for nodeForceRelease):
	// on a Client with a Redis Cluster member, its last argument is the
	// Mutex's announceOn, and the announcement is sharded.
	announce bool
	// fenced puts the keys' fencing counters after the lock keys, and
	// makes an error reply with fenceErrorCode mean ErrFenceCounter.
	fenced bool
	// argument is what follows the token.
	argument argumentKind
	// guarded puts the Mutex's guard keys after its keys (and counters):
	// the keys of a read/write lock that its acquisition checks but does
	// not hold (see RWMutex).
	guarded bool
	// guardsOnly gives the command the guard keys alone: the commands
	// that put a fair lock's waiter in line.
	guardsOnly bool
	// extra puts the acquisition's extra arguments after the number (see
	// acquisition.extras).
	extra bool
	// candidates gives the command the keys of acquisition.candidates
	// instead of the Mutex's: a Semaphore's slots (see attemptOneOf).
	candidates bool
	// choice marks an acquisition whose confirmations each name the key
	// the node chose among the candidates (its position, nodeOutcome's
	// choice), read by readChoice instead of read: a round counts the
	// confirmations of the key most nodes chose, and is decided when a
	// quorum chose one.
	choice     bool
	readChoice func(reply resp.Value, candidates int) (outcome Outcome, number, choice int64, ok bool)
	// everyNode makes a round wait for every node's reply, not only for a
	// quorum's.
	everyNode bool
	// vote marks the commands whose confirmations count towards a hold's
	// quorum: acquisitions, fence commits, extensions and checks. A
	// quarantined node's do not (see quarantine); its releases still go.
	vote bool
	// read tells what a reply that is not an error means for a command
	// over keys lock keys (or candidates): the node's outcome and the number it carries:
	// the counter of a fenced acquisition, the remaining TTL of a check,
	// and for an acquisition refused, how long the node will refuse in
	// milliseconds (-1 when it cannot tell). ok is false for a reply the
	// script never gives.
	read func(reply resp.Value, keys int) (outcome Outcome, number int64, ok bool)
}

// protocol is the protocol table: every command a Mutex sends to a node.
var protocol = [...]nodeCommand{
	nodeAcquire:        {vote: true, delivered: true, operation: OperationLock, argument: argumentNumber, read: readAcquire},
	nodeAcquireWaiting: {vote: true, delivered: true, operation: OperationLock, script: acquireWaitingLua, argument: argumentNumber, read: readAcquire},
	nodeAcquireMulti:   {vote: true, delivered: true, operation: OperationLock, script: acquireMultiLua, argument: argumentNumber, read: readAcquire},
	nodeAcquireFenced:  {vote: true, delivered: true, operation: OperationLock, script: acquireFencedLua, fenced: true, argument: argumentNumber, read: readAcquireFenced},
	nodeCommitFence:    {vote: true, operation: OperationLock, script: commitFenceLua, fenced: true, argument: argumentNumber, read: readCommitFence},
	nodeRelease:        {announce: true, operation: OperationUnlock, script: releaseLua, eval: true, carried: true, argument: argumentIdentity, read: readRelease},
	nodeQuietRelease:   {operation: OperationUnlock, script: releaseLua, eval: true, carried: true, read: readRelease},
	nodeExtend:         {vote: true, operation: OperationExtend, script: extendLua, argument: argumentNumber, read: readExtend},
	nodeRepair:         {operation: OperationExtend, script: repairLua, eval: true, argument: argumentNumber, read: readRepair},
	nodeCheck:          {vote: true, operation: OperationResume, script: checkLua, read: readCheck},

	nodeAcquireWrite:       {vote: true, delivered: true, operation: OperationLock, script: acquireWriteLua, guarded: true, extra: true, argument: argumentNumber, read: readAcquire},
	nodeAcquireWriteFenced: {vote: true, delivered: true, operation: OperationLock, script: acquireWriteLua, guarded: true, fenced: true, extra: true, argument: argumentNumber, read: readAcquireFenced},
	nodeAcquireRead:        {vote: true, delivered: true, operation: OperationLock, script: acquireReadLua, guarded: true, extra: true, argument: argumentNumber, read: readAcquire},
	nodeReleaseRead:        {announce: true, operation: OperationUnlock, script: releaseReadLua, eval: true, carried: true, argument: argumentIdentity, read: readRelease},
	nodeQuietReleaseRead:   {operation: OperationUnlock, script: releaseReadLua, eval: true, carried: true, read: readRelease},
	nodeExtendRead:         {vote: true, operation: OperationExtend, script: extendReadLua, argument: argumentNumber, read: readExtend},
	nodeRepairRead:         {operation: OperationExtend, script: repairReadLua, eval: true, guarded: true, argument: argumentNumber, read: readRepair},
	nodeCheckRead:          {vote: true, operation: OperationResume, script: checkReadLua, read: readCheck},

	nodeAcquireFair:       {vote: true, delivered: true, operation: OperationLock, script: acquireFairLua, guarded: true, extra: true, argument: argumentNumber, read: readAcquireFair},
	nodeAcquireFairFenced: {vote: true, delivered: true, operation: OperationLock, script: acquireFairLua, guarded: true, fenced: true, extra: true, argument: argumentNumber, read: readAcquireFairFenced},
	nodeReleaseFair:       {announce: true, operation: OperationUnlock, script: releaseFairLua, eval: true, carried: true, guarded: true, argument: argumentIdentity, read: readRelease},
	nodeFairTicket:        {operation: OperationLock, script: fairTicketLua, guardsOnly: true, read: readTicket},
	nodeFairEnqueue:       {operation: OperationLock, script: fairEnqueueLua, guardsOnly: true, extra: true, argument: argumentNumber, read: readOne},
	nodeFairLeave:         {operation: OperationLock, script: fairLeaveLua, eval: true, guardsOnly: true, read: readOne},

	nodeForceRelease: {announce: true, operation: OperationUnlock, script: forceReleaseLua, eval: true, everyNode: true, read: readOne},

	nodeAcquirePermit:       {vote: true, delivered: true, operation: OperationLock, script: acquirePermitLua, candidates: true, choice: true, argument: argumentNumber, readChoice: readAcquirePermit},
	nodeAcquirePermitFenced: {vote: true, delivered: true, operation: OperationLock, script: acquirePermitFencedLua, candidates: true, choice: true, fenced: true, argument: argumentNumber, readChoice: readAcquirePermit},
	nodeQuietReleasePermits: {operation: OperationUnlock, script: releaseLua, eval: true, carried: true, candidates: true, read: readRelease},
}

// The scripts of the protocol, each sent by its SHA1 (EVALSHA) unless its
// row says eval.
var (
	acquireMultiLua        = newScript(acquireMultiScript)
	acquireWaitingLua      = newScript(acquireWaitingScript)
	acquireFencedLua       = newScript(decimal.Lua + acquireFencedScript)
	commitFenceLua         = newScript(decimal.Lua + commitFenceScript)
	releaseLua             = newScript(releaseScript)
	extendLua              = newScript(extendScript)
	repairLua              = newScript(repairScript)
	checkLua               = newScript(checkScript)
	acquireWriteLua        = newScript(decimal.Lua + acquireWriteScript)
	acquireReadLua         = newScript(acquireReadScript)
	releaseReadLua         = newScript(releaseReadScript)
	extendReadLua          = newScript(extendReadScript)
	repairReadLua          = newScript(repairReadScript)
	checkReadLua           = newScript(checkReadScript)
	acquireFairLua         = newScript(decimal.Lua + acquireFairScript)
	fairTicketLua          = newScript(fairTicketScript)
	fairEnqueueLua         = newScript(fairEnqueueScript)
	fairLeaveLua           = newScript(fairLeaveScript)
	releaseFairLua         = newScript(releaseFairScript)
	forceReleaseLua        = newScript(forceReleaseScript)
	acquirePermitLua       = newScript(acquirePermitScript)
	acquirePermitFencedLua = newScript(decimal.Lua + acquirePermitFencedScript)
)

// readAcquire reads an acquisition: OK; or nil, from SET NX, for a key
// that exists; or, from the scripts, the remaining TTL of the keys that
// exist.
func readAcquire(reply resp.Value, _ int) (Outcome, int64, bool) {
	switch {
	case reply.IsOK():
		return OutcomeConfirmed, 0, true
	case reply.Null:
		return OutcomeHeld, refusalUnknown, true
	}
	return readRefusal(reply)
}

// readAcquireFenced reads acquireFencedScript: the largest counter, or
// the remaining TTL of the keys that exist.
func readAcquireFenced(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeBulkString && !reply.Null {
		if counter, ok := parseCounter(reply.Str); ok {
			return OutcomeConfirmed, counter, true
		}
		return 0, 0, false
	}
	return readRefusal(reply)
}

// readAcquireFair reads acquireFairScript as readAcquire does, and its
// refusal of a waiter that is not in the node's line (refusalOutOfLine).
func readAcquireFair(reply resp.Value, keys int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger && reply.Int == refusalOutOfLine {
		return OutcomeHeld, refusalOutOfLine, true
	}
	return readAcquire(reply, keys)
}

// readAcquireFairFenced reads acquireFairScript with fencing as
// readAcquireFenced does, and its refusal of a waiter that is not in the
// node's line (refusalOutOfLine).
func readAcquireFairFenced(reply resp.Value, keys int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger && reply.Int == refusalOutOfLine {
		return OutcomeHeld, refusalOutOfLine, true
	}
	return readAcquireFenced(reply, keys)
}

// readAcquirePermit reads acquirePermitScript and
// acquirePermitFencedScript: the position of the candidate the node set
// and, after a space, its counter; or how long the node will refuse.
func readAcquirePermit(reply resp.Value, candidates int) (outcome Outcome, counter, position int64, ok bool) {
	if reply.Type != resp.TypeBulkString || reply.Null {
		outcome, refusal, ok := readRefusal(reply)
		return outcome, refusal, 0, ok
	}
	text := reply.Str
	if space := bytes.IndexByte(text, ' '); space >= 0 {
		if counter, ok = parseCounter(text[space+1:]); !ok {
			return 0, 0, 0, false
		}
		text = text[:space]
	}
	if position, ok = parseCounter(text); !ok || position >= int64(candidates) {
		return 0, 0, 0, false
	}
	return OutcomeConfirmed, counter, position, true
}

// refusalUnknown is the number of a refused acquisition when the node
// cannot tell how long it will refuse: a key without a TTL, or SET NX,
// which does not say.
const refusalUnknown = -1

// refusalOutOfLine is the number of a fair lock's waiter's acquisition
// that a node refused because the waiter is not in its line: its
// heartbeat lapsed there, or the node served it in an attempt that
// failed. It tells no time, as refusalUnknown does.
const refusalOutOfLine = -2

// readRefusal reads the refusal of an acquisition script: how long the
// node will refuse, in milliseconds, or refusalUnknown.
func readRefusal(reply resp.Value) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger && reply.Int >= refusalUnknown {
		return OutcomeHeld, reply.Int, true
	}
	return 0, 0, false
}

// readCommitFence reads commitFenceScript.
func readCommitFence(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger {
		switch reply.Int {
		case 1:
			return OutcomeConfirmed, 0, true
		case 0:
			return OutcomeMissing, 0, true
		}
	}
	return 0, 0, false
}

// readRelease reads releaseScript: the node released the hold when it
// deleted every key; part of a multi-key hold, or none of it, was still
// ours otherwise.
func readRelease(reply resp.Value, keys int) (Outcome, int64, bool) {
	switch {
	case reply.Type != resp.TypeInteger || reply.Int < 0 || reply.Int > int64(keys):
		return 0, 0, false
	case reply.Int == int64(keys):
		return OutcomeConfirmed, 0, true
	}
	return OutcomeMissing, 0, true
}

// readExtend reads extendScript.
func readExtend(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger {
		switch reply.Int {
		case extendExtended:
			return OutcomeConfirmed, 0, true
		case extendMissing:
			return OutcomeMissing, 0, true
		case extendHeld:
			return OutcomeHeld, 0, true
		}
	}
	return 0, 0, false
}

// readRepair reads repairScript, whose replies are not awaited: they are
// read only if a round gathers them anyway.
func readRepair(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger {
		switch reply.Int {
		case 1:
			return OutcomeConfirmed, 0, true
		case -1:
			return OutcomeHeld, 0, true
		}
	}
	return 0, 0, false
}

// readCheck reads checkScript: the smallest remaining TTL of the keys, or
// why the node does not hold them.
func readCheck(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type != resp.TypeInteger {
		return 0, 0, false
	}
	switch reply.Int {
	case checkHeld:
		return OutcomeHeld, 0, true
	case checkMissing, checkPersistent:
		return OutcomeMissing, 0, true
	}
	if reply.Int < 0 {
		return 0, 0, false
	}
	return OutcomeConfirmed, reply.Int, true
}

// readTicket reads fairTicketScript: the node's ticket counter.
func readTicket(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger && reply.Int >= 0 {
		return OutcomeConfirmed, reply.Int, true
	}
	return 0, 0, false
}

// readOne reads the scripts of a fair lock's queue that answer 1 when
// they did what they were asked, 0 when there was nothing to do.
func readOne(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger && (reply.Int == 0 || reply.Int == 1) {
		return OutcomeConfirmed, reply.Int, true
	}
	return 0, 0, false
}
