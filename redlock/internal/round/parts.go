package round

import (
	"fmt"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/resp"
)

// commandKeys are the keys of one command: the groups it writes, in
// order, and how many lock keys (or candidates) its replies speak of.
type commandKeys struct {
	groups  [3][]string
	counted int
}

// count is the number of keys the command writes.
func (k *commandKeys) count() int {
	return len(k.groups[0]) + len(k.groups[1]) + len(k.groups[2])
}

// appendTo writes the keys into round.
func (k *commandKeys) appendTo(round *mux.Round) {
	for _, group := range k.groups {
		for _, key := range group {
			round.AppendString(key)
		}
	}
}

// The keys of the protocol's rows.

// keysHeld are the lock's keys.
func keysHeld(r *Round) commandKeys {
	return commandKeys{groups: [3][]string{r.Lock.Keys}, counted: len(r.Lock.Keys)}
}

// keysFenced are the lock's keys and their fencing counters.
func keysFenced(r *Round) commandKeys {
	return commandKeys{groups: [3][]string{r.Lock.Keys, r.Lock.FenceKeys}, counted: len(r.Lock.Keys)}
}

// keysGuarded are the lock's keys and its guards: the keys a read/write
// or fair lock checks but does not hold.
func keysGuarded(r *Round) commandKeys {
	return commandKeys{groups: [3][]string{r.Lock.Keys, r.Lock.Guards}, counted: len(r.Lock.Keys)}
}

// keysGuardedFenced are the lock's keys, their counters and its guards.
func keysGuardedFenced(r *Round) commandKeys {
	return commandKeys{groups: [3][]string{r.Lock.Keys, r.Lock.FenceKeys, r.Lock.Guards}, counted: len(r.Lock.Keys)}
}

// keysOfLine are the guards alone: a fair lock's line.
func keysOfLine(r *Round) commandKeys {
	return commandKeys{groups: [3][]string{r.Lock.Guards}, counted: len(r.Lock.Keys)}
}

// keysCandidate are a Semaphore's candidate slots.
func keysCandidate(r *Round) commandKeys {
	return commandKeys{groups: [3][]string{r.Candidates}, counted: len(r.Candidates)}
}

// keysCandidateFenced are the candidate slots and their counters.
func keysCandidateFenced(r *Round) commandKeys {
	return commandKeys{groups: [3][]string{r.Candidates, r.CandidateFences}, counted: len(r.Candidates)}
}

// commandArguments are what follows the token in one command.
type commandArguments struct {
	number     int64
	numbered   bool
	identity   []byte // nil: none
	extras     [][]byte
	announceOn string // the prefix of the sharded release channels; "": none
}

// count is the number of arguments, the token included.
func (a *commandArguments) count() int {
	count := 1 + len(a.extras)
	if a.numbered {
		count++
	}
	if a.identity != nil {
		count++
	}
	if a.announceOn != "" {
		count++
	}
	return count
}

// appendTo writes the arguments after the token into round.
func (a *commandArguments) appendTo(round *mux.Round) {
	if a.numbered {
		round.AppendInt(a.number)
	}
	if a.identity != nil {
		round.AppendBulk(a.identity)
	}
	for _, extra := range a.extras {
		round.AppendBulk(extra)
	}
	if a.announceOn != "" {
		round.AppendString(a.announceOn)
	}
}

// The arguments of the protocol's rows.

// withNothing adds nothing after the token.
func withNothing(*Round, int64, []byte) commandArguments { return commandArguments{} }

// withNumber adds the number: a TTL or a fence.
func withNumber(_ *Round, number int64, _ []byte) commandArguments {
	return commandArguments{number: number, numbered: true}
}

// withNumberAndExtras adds the number and the acquisition's extra
// arguments (Lock.Extras).
func withNumberAndExtras(r *Round, number int64, _ []byte) commandArguments {
	arguments := commandArguments{number: number, numbered: true}
	if r.Lock.Extras != nil {
		arguments.extras = *r.Lock.Extras
	}
	return arguments
}

// withAnnouncedIdentity adds the release's identity, if any, and the
// channels' prefix it is announced on.
func withAnnouncedIdentity(r *Round, _ int64, identity []byte) commandArguments {
	if identity == nil {
		return commandArguments{}
	}
	return commandArguments{identity: identity, announceOn: r.Lock.AnnounceOn}
}

// withAnnouncement adds the channels' prefix alone: the script announces
// under the token.
func withAnnouncement(r *Round, _ int64, _ []byte) commandArguments {
	return commandArguments{announceOn: r.Lock.AnnounceOn}
}

// readFenceError reads the error reply of a fencing script whose counter
// is not a fence (protocol.FenceErrorCode).
func readFenceError(reply resp.Value) (error, bool) {
	if !protocol.IsFenceError(reply) {
		return nil, false
	}
	return fmt.Errorf("%w: %w", ErrFenceCounter, reply.Err()), true
}
