package redlock

import (
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/resp"
)

// command is one command of the protocol between a Mutex and a node.
// The protocol table says, for each, how it is written and what its
// replies mean; a round (round.go) writes any of them and counts any of
// their replies the same way.
type command uint8

const (
	// nodeAcquire sets one key: SET key token NX PX ttl.
	nodeAcquire command = iota
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
	// candidate slots (lentRounds.candidates): set the first free one,
	// with and without fencing, and release whichever of them a node set
	// with the token.
	nodeAcquirePermit
	nodeAcquirePermitFenced
	nodeQuietReleasePermits

	// commandCount counts the commands.
	commandCount
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
var commandsOf = func() [lockKinds][commandCount]command {
	var table [lockKinds][commandCount]command
	for kind := range table {
		for command := range commandCount {
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

// dispatch is how a row's command is sent, and what becomes of it when
// nobody waits for its replies.
type dispatch uint8

const (
	// sentAwaited is sent by the script's SHA1 (EVALSHA) and read by the
	// caller.
	sentAwaited dispatch = iota
	// sentDelivered is an acquisition: it reaches a node whose connection
	// is still being dialled even when the round was decided without it
	// (mux.Round.Deliver), so that a hold lives on every node it can.
	sentDelivered
	// sentWhole is sent with EVAL: nobody may be there to answer
	// NOSCRIPT, because the reply is not awaited.
	sentWhole
	// sentCarried is a release, sent with EVAL: the transport finishes it
	// whoever waits (mux.Round.Carry).
	sentCarried
)

// counting is how a round counts a row's confirmations.
type counting uint8

const (
	// quorumDecides decides the round at a quorum of confirmations.
	quorumDecides counting = iota
	// votesCount does too, and its confirmations count towards a hold's
	// quorum: a quarantined node's do not (see quarantine).
	votesCount
	// everyNodeAnswers waits for every node's reply.
	everyNodeAnswers
)

// commandRow is one row of the protocol table: what a command sends, and
// what its replies mean.
type commandRow struct {
	// operation is the operation the command serves, as users see it.
	operation Operation
	// script is the command's script; nil for the plain SET.
	script   *mux.Script
	dispatch dispatch
	counting counting
	// keys are the keys the command writes (protocol_parts.go).
	keys func(m *Mutex) commandKeys
	// arguments are what follows the token (protocol_parts.go).
	arguments func(m *Mutex, number int64, identity []byte) commandArguments
	// read tells what a reply that is not an error means for a command
	// over keys lock keys: the node's outcome and the number it carries
	// (a fence, a remaining TTL, or how long a refusal lasts; -1 when the
	// node cannot tell). ok is false for a reply the script never gives.
	read func(reply resp.Value, keys int) (outcome protocol.Outcome, number int64, ok bool)
	// readChoice replaces read for a command whose confirmations each name
	// the candidate the node chose: a round counts the key most nodes
	// chose.
	readChoice func(reply resp.Value, candidates int) (outcome protocol.Outcome, number, choice int64, ok bool)
	// readError, when set, reads an error reply before the common rules.
	readError func(reply resp.Value) (err error, ok bool)
}

// bySHA reports whether the command's script is sent by its SHA1, and
// so must be loaded on every connection.
func (c *commandRow) bySHA() bool {
	return c.script != nil && c.dispatch != sentWhole && c.dispatch != sentCarried
}

// protocol is the protocol table: every command a Mutex sends to a node.
var commandTable = [...]commandRow{
	nodeAcquire:        {operation: OperationLock, dispatch: sentDelivered, counting: votesCount, keys: keysHeld, arguments: withNumber, read: protocol.ReadAcquire},
	nodeAcquireWaiting: {operation: OperationLock, script: protocol.AcquireWaiting, dispatch: sentDelivered, counting: votesCount, keys: keysHeld, arguments: withNumber, read: protocol.ReadAcquire},
	nodeAcquireMulti:   {operation: OperationLock, script: protocol.AcquireMulti, dispatch: sentDelivered, counting: votesCount, keys: keysHeld, arguments: withNumber, read: protocol.ReadAcquire},
	nodeAcquireFenced:  {operation: OperationLock, script: protocol.AcquireFenced, dispatch: sentDelivered, counting: votesCount, keys: keysFenced, arguments: withNumber, read: protocol.ReadAcquireFenced, readError: readFenceError},
	nodeCommitFence:    {operation: OperationLock, script: protocol.CommitFence, counting: votesCount, keys: keysFenced, arguments: withNumber, read: protocol.ReadCommitFence, readError: readFenceError},
	nodeRelease:        {operation: OperationUnlock, script: protocol.Release, dispatch: sentCarried, keys: keysHeld, arguments: withAnnouncedIdentity, read: protocol.ReadRelease},
	nodeQuietRelease:   {operation: OperationUnlock, script: protocol.Release, dispatch: sentCarried, keys: keysHeld, arguments: withNothing, read: protocol.ReadRelease},
	nodeExtend:         {operation: OperationExtend, script: protocol.Extend, counting: votesCount, keys: keysHeld, arguments: withNumber, read: protocol.ReadExtend},
	nodeRepair:         {operation: OperationExtend, script: protocol.Repair, dispatch: sentWhole, keys: keysHeld, arguments: withNumber, read: protocol.ReadRepair},
	nodeCheck:          {operation: OperationResume, script: protocol.Check, counting: votesCount, keys: keysHeld, arguments: withNothing, read: protocol.ReadCheck},

	nodeAcquireWrite:       {operation: OperationLock, script: protocol.AcquireWrite, dispatch: sentDelivered, counting: votesCount, keys: keysGuarded, arguments: withNumberAndExtras, read: protocol.ReadAcquire},
	nodeAcquireWriteFenced: {operation: OperationLock, script: protocol.AcquireWrite, dispatch: sentDelivered, counting: votesCount, keys: keysGuardedFenced, arguments: withNumberAndExtras, read: protocol.ReadAcquireFenced, readError: readFenceError},
	nodeAcquireRead:        {operation: OperationLock, script: protocol.AcquireRead, dispatch: sentDelivered, counting: votesCount, keys: keysGuarded, arguments: withNumberAndExtras, read: protocol.ReadAcquire},
	nodeReleaseRead:        {operation: OperationUnlock, script: protocol.ReleaseRead, dispatch: sentCarried, keys: keysHeld, arguments: withAnnouncedIdentity, read: protocol.ReadRelease},
	nodeQuietReleaseRead:   {operation: OperationUnlock, script: protocol.ReleaseRead, dispatch: sentCarried, keys: keysHeld, arguments: withNothing, read: protocol.ReadRelease},
	nodeExtendRead:         {operation: OperationExtend, script: protocol.ExtendRead, counting: votesCount, keys: keysHeld, arguments: withNumber, read: protocol.ReadExtend},
	nodeRepairRead:         {operation: OperationExtend, script: protocol.RepairRead, dispatch: sentWhole, keys: keysGuarded, arguments: withNumber, read: protocol.ReadRepair},
	nodeCheckRead:          {operation: OperationResume, script: protocol.CheckRead, counting: votesCount, keys: keysHeld, arguments: withNothing, read: protocol.ReadCheck},

	nodeAcquireFair:       {operation: OperationLock, script: protocol.AcquireFair, dispatch: sentDelivered, counting: votesCount, keys: keysGuarded, arguments: withNumberAndExtras, read: protocol.ReadAcquireFair},
	nodeAcquireFairFenced: {operation: OperationLock, script: protocol.AcquireFair, dispatch: sentDelivered, counting: votesCount, keys: keysGuardedFenced, arguments: withNumberAndExtras, read: protocol.ReadAcquireFairFenced, readError: readFenceError},
	nodeReleaseFair:       {operation: OperationUnlock, script: protocol.ReleaseFair, dispatch: sentCarried, keys: keysGuarded, arguments: withAnnouncedIdentity, read: protocol.ReadRelease},
	nodeFairTicket:        {operation: OperationLock, script: protocol.FairTicket, keys: keysOfLine, arguments: withNothing, read: protocol.ReadTicket},
	nodeFairEnqueue:       {operation: OperationLock, script: protocol.FairEnqueue, keys: keysOfLine, arguments: withNumberAndExtras, read: protocol.ReadOne},
	nodeFairLeave:         {operation: OperationLock, script: protocol.FairLeave, dispatch: sentWhole, keys: keysOfLine, arguments: withNothing, read: protocol.ReadOne},

	nodeForceRelease: {operation: OperationUnlock, script: protocol.ForceRelease, dispatch: sentWhole, counting: everyNodeAnswers, keys: keysHeld, arguments: withAnnouncement, read: protocol.ReadOne},

	nodeAcquirePermit:       {operation: OperationLock, script: protocol.AcquirePermit, dispatch: sentDelivered, counting: votesCount, keys: keysCandidate, arguments: withNumber, readChoice: protocol.ReadAcquirePermit},
	nodeAcquirePermitFenced: {operation: OperationLock, script: protocol.AcquirePermitFenced, dispatch: sentDelivered, counting: votesCount, keys: keysCandidateFenced, arguments: withNumber, readChoice: protocol.ReadAcquirePermit, readError: readFenceError},
	nodeQuietReleasePermits: {operation: OperationUnlock, script: protocol.Release, dispatch: sentCarried, keys: keysCandidate, arguments: withNothing, read: protocol.ReadRelease},
}
