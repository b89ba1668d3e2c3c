package round

import (
	"strconv"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/resp"
)

// Command is one command of the protocol between a lock and a node.
// The protocol table says how each is written and what its replies mean.
type Command uint8

const (
	// Acquire sets one key: SET key token NX PX ttl.
	Acquire Command = iota
	// AcquireWaiting is Acquire telling how long a held key lives.
	AcquireWaiting
	// AcquireMulti sets several keys, all or nothing.
	AcquireMulti
	// AcquireFenced sets the keys and reads their fencing counters.
	AcquireFenced
	// CommitFence raises the keys' counters to the hold's fence.
	CommitFence
	// Release deletes the keys that hold the token and announces it.
	Release
	// QuietRelease is Release announcing nothing: a failed attempt's.
	QuietRelease
	// Extend sets the TTL of every key that holds the token.
	Extend
	// Repair sets the keys again on a node that lost them.
	Repair
	// Check tells whether the keys hold the token, to resume a hold.
	Check

	// A read/write lock's commands that differ from a plain lock's.
	AcquireWrite
	AcquireWriteFenced
	AcquireRead
	ReleaseRead
	QuietReleaseRead
	ExtendRead
	RepairRead
	CheckRead

	// A fair lock's: its acquisition, and its line's entry and exit.
	AcquireFair
	AcquireFairFenced
	ReleaseFair
	FairTicket
	FairEnqueue
	FairLeave

	// ForceRelease deletes a lock key whoever holds it.
	ForceRelease

	// A Semaphore's one-round acquisition over Round.Candidates, and
	// the release of whichever slot a node set.
	AcquirePermit
	AcquirePermitFenced
	QuietReleasePermits

	commandCount
)

// Kind is what a lock's holds are: plain, fair, or a read/write lock's
// writer or reader.
type Kind uint8

// The kinds of lock.
const (
	KindPlain Kind = iota
	KindWrite
	KindRead
	KindFair
	kinds
)

// Operation is the step a command serves, as redlock.Operation numbers it.
type Operation uint8

// The operations, in redlock.Operation's order.
const (
	OperationLock Operation = iota
	OperationExtend
	OperationUnlock
	OperationResume
)

// String returns the operation's name, as redlock.Operation's does.
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
	}
	return "Operation(" + strconv.Itoa(int(o)) + ")"
}

// commandsOf maps, for each kind, the command a plain hold uses for a step
// (acquire, release, extend…) to the one the kind uses. Every operation
// names the plain command, and Round.Start maps it.
var commandsOf = func() [kinds][commandCount]Command {
	var table [kinds][commandCount]Command
	for kind := range table {
		for command := range commandCount {
			table[kind][command] = command
		}
	}
	write, read := &table[KindWrite], &table[KindRead]
	write[Acquire], write[AcquireWaiting], write[AcquireFenced] = AcquireWrite, AcquireWrite, AcquireWriteFenced
	read[Acquire], read[AcquireWaiting] = AcquireRead, AcquireRead
	read[Release], read[QuietRelease] = ReleaseRead, QuietReleaseRead
	read[Extend], read[Repair], read[Check] = ExtendRead, RepairRead, CheckRead
	fair := &table[KindFair]
	fair[Acquire], fair[AcquireWaiting], fair[Release] = AcquireFair, AcquireFair, ReleaseFair
	fair[AcquireFenced] = AcquireFairFenced
	return table
}()

// dispatch is how a row's command is sent, and what becomes of it when
// nobody waits for its replies.
type dispatch uint8

const (
	// sentAwaited is sent by SHA1 (EVALSHA) and read by the caller.
	sentAwaited dispatch = iota
	// sentDelivered is an acquisition, delivered to a node still being
	// dialled after the round is decided (mux.Round.Deliver).
	sentDelivered
	// sentWhole is sent with EVAL: nobody may await a NOSCRIPT.
	sentWhole
	// sentCarried is a release, sent with EVAL: the transport finishes it
	// whoever waits (mux.Round.Carry).
	sentCarried
)

// counting is how a round counts a row's confirmations.
type counting uint8

const (
	quorumDecides    counting = iota // a quorum of confirmations decides
	votesCount                       // so does a quorum of votes the quarantine lets count
	everyNodeAnswers                 // every node's reply is awaited
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
	// keys are the keys the command writes (parts.go).
	keys func(r *Round) commandKeys
	// arguments are what follows the token (parts.go).
	arguments func(r *Round, number int64, identity []byte) commandArguments
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

// ScriptsBySHA returns the scripts of the rows sent by their SHA1, in
// the table's order, a script once per row: every connection loads them.
func ScriptsBySHA() []*mux.Script {
	var scripts []*mux.Script
	for _, row := range commandTable {
		if row.bySHA() {
			scripts = append(scripts, row.script)
		}
	}
	return scripts
}

// commandTable is the protocol table: every command a lock sends to a node.
var commandTable = [...]commandRow{
	Acquire:        {operation: OperationLock, dispatch: sentDelivered, counting: votesCount, keys: keysHeld, arguments: withNumber, read: protocol.ReadAcquire},
	AcquireWaiting: {operation: OperationLock, script: protocol.AcquireWaiting, dispatch: sentDelivered, counting: votesCount, keys: keysHeld, arguments: withNumber, read: protocol.ReadAcquire},
	AcquireMulti:   {operation: OperationLock, script: protocol.AcquireMulti, dispatch: sentDelivered, counting: votesCount, keys: keysHeld, arguments: withNumber, read: protocol.ReadAcquire},
	AcquireFenced:  {operation: OperationLock, script: protocol.AcquireFenced, dispatch: sentDelivered, counting: votesCount, keys: keysFenced, arguments: withNumber, read: protocol.ReadAcquireFenced, readError: readFenceError},
	CommitFence:    {operation: OperationLock, script: protocol.CommitFence, counting: votesCount, keys: keysFenced, arguments: withNumber, read: protocol.ReadCommitFence, readError: readFenceError},
	Release:        {operation: OperationUnlock, script: protocol.Release, dispatch: sentCarried, keys: keysHeld, arguments: withAnnouncedIdentity, read: protocol.ReadRelease},
	QuietRelease:   {operation: OperationUnlock, script: protocol.Release, dispatch: sentCarried, keys: keysHeld, arguments: withNothing, read: protocol.ReadRelease},
	Extend:         {operation: OperationExtend, script: protocol.Extend, counting: votesCount, keys: keysHeld, arguments: withNumber, read: protocol.ReadExtend},
	Repair:         {operation: OperationExtend, script: protocol.Repair, dispatch: sentWhole, keys: keysHeld, arguments: withNumber, read: protocol.ReadRepair},
	Check:          {operation: OperationResume, script: protocol.Check, counting: votesCount, keys: keysHeld, arguments: withNothing, read: protocol.ReadCheck},

	AcquireWrite:       {operation: OperationLock, script: protocol.AcquireWrite, dispatch: sentDelivered, counting: votesCount, keys: keysGuarded, arguments: withNumberAndExtras, read: protocol.ReadAcquire},
	AcquireWriteFenced: {operation: OperationLock, script: protocol.AcquireWrite, dispatch: sentDelivered, counting: votesCount, keys: keysGuardedFenced, arguments: withNumberAndExtras, read: protocol.ReadAcquireFenced, readError: readFenceError},
	AcquireRead:        {operation: OperationLock, script: protocol.AcquireRead, dispatch: sentDelivered, counting: votesCount, keys: keysGuarded, arguments: withNumberAndExtras, read: protocol.ReadAcquire},
	ReleaseRead:        {operation: OperationUnlock, script: protocol.ReleaseRead, dispatch: sentCarried, keys: keysHeld, arguments: withAnnouncedIdentity, read: protocol.ReadRelease},
	QuietReleaseRead:   {operation: OperationUnlock, script: protocol.ReleaseRead, dispatch: sentCarried, keys: keysHeld, arguments: withNothing, read: protocol.ReadRelease},
	ExtendRead:         {operation: OperationExtend, script: protocol.ExtendRead, counting: votesCount, keys: keysHeld, arguments: withNumber, read: protocol.ReadExtend},
	RepairRead:         {operation: OperationExtend, script: protocol.RepairRead, dispatch: sentWhole, keys: keysGuarded, arguments: withNumber, read: protocol.ReadRepair},
	CheckRead:          {operation: OperationResume, script: protocol.CheckRead, counting: votesCount, keys: keysHeld, arguments: withNothing, read: protocol.ReadCheck},

	AcquireFair:       {operation: OperationLock, script: protocol.AcquireFair, dispatch: sentDelivered, counting: votesCount, keys: keysGuarded, arguments: withNumberAndExtras, read: protocol.ReadAcquireFair},
	AcquireFairFenced: {operation: OperationLock, script: protocol.AcquireFair, dispatch: sentDelivered, counting: votesCount, keys: keysGuardedFenced, arguments: withNumberAndExtras, read: protocol.ReadAcquireFairFenced, readError: readFenceError},
	ReleaseFair:       {operation: OperationUnlock, script: protocol.ReleaseFair, dispatch: sentCarried, keys: keysGuarded, arguments: withAnnouncedIdentity, read: protocol.ReadRelease},
	FairTicket:        {operation: OperationLock, script: protocol.FairTicket, keys: keysOfLine, arguments: withNothing, read: protocol.ReadTicket},
	FairEnqueue:       {operation: OperationLock, script: protocol.FairEnqueue, keys: keysOfLine, arguments: withNumberAndExtras, read: protocol.ReadOne},
	FairLeave:         {operation: OperationLock, script: protocol.FairLeave, dispatch: sentWhole, keys: keysOfLine, arguments: withNothing, read: protocol.ReadOne},

	ForceRelease: {operation: OperationUnlock, script: protocol.ForceRelease, dispatch: sentWhole, counting: everyNodeAnswers, keys: keysHeld, arguments: withAnnouncement, read: protocol.ReadOne},

	AcquirePermit:       {operation: OperationLock, script: protocol.AcquirePermit, dispatch: sentDelivered, counting: votesCount, keys: keysCandidate, arguments: withNumber, readChoice: protocol.ReadAcquirePermit},
	AcquirePermitFenced: {operation: OperationLock, script: protocol.AcquirePermitFenced, dispatch: sentDelivered, counting: votesCount, keys: keysCandidateFenced, arguments: withNumber, readChoice: protocol.ReadAcquirePermit, readError: readFenceError},
	QuietReleasePermits: {operation: OperationUnlock, script: protocol.Release, dispatch: sentCarried, keys: keysCandidate, arguments: withNothing, read: protocol.ReadRelease},
}
