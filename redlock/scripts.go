package redlock

import (
	_ "embed"
	"strings"

	"github.com/lockmux/lockmux/mux"
)

// The Lua scripts run on the nodes. Each takes the lock keys as KEYS (the
// Mutex's key first, then MutexOptions.Keys; the fencing scripts then the
// keys' counters) and the token as ARGV[1]. They use only GET, SET, DEL,
// PEXPIRE and PTTL on the keys they are given (the scripts of a read/write
// lock also EXISTS, TIME and the sorted-set commands ZADD, ZREM, ZSCORE,
// ZRANGE and ZREMRANGEBYSCORE), so they are safe to replicate and touch no
// undeclared key. None of them catches errors: a key
// of the wrong type makes them fail with WRONGTYPE, which the caller
// reports as ErrConfig. A fencing counter that is not a decimal integer
// makes the fencing scripts answer an error reply with the code
// fenceErrorCode, which the caller reports as ErrFenceCounter. Fences and
// counters never pass through a Lua number, a double that is exact only
// up to 2^53: the scripts compare them as decimal strings, and the client
// does the arithmetic on int64.
//
// The first attempt of a single-key acquisition does not use a script: it
// is a plain SET key token NX PX ttl. The attempts of a Lock that waits
// use acquireWaitingScript, which also tells when the key will be free.
var (
	// releaseScript deletes every key that holds the token (compare and
	// delete). It returns the number of keys released: len(KEYS) means the
	// node released the hold, 0 that it held none of it (missing, expired or
	// another token); anything in between means the node held part of a
	// multi-key hold.
	//
	//go:embed scripts/release.lua
	releaseScript string

	// extendScript sets the TTL ARGV[2] (milliseconds) on every key with
	// PEXPIRE, all or nothing, if each key holds the token. It returns
	// extendExtended, extendMissing or extendHeld.
	//
	//go:embed scripts/extend.lua
	extendScript string

	// acquireMultiScript sets every key with SET NX PX ARGV[2]
	// (milliseconds), all or nothing: it returns OK when it set them all;
	// if a key already exists, it deletes the keys it set and returns the
	// longest remaining TTL of the keys that exist, in milliseconds, or -1
	// when one has none. A key of the wrong type fails with WRONGTYPE
	// after that clean-up.
	//
	//go:embed scripts/acquire_multi.lua
	acquireMultiScript string

	// acquireWaitingScript sets one key as SET NX PX ARGV[2] does, for a
	// Lock that waits: it returns OK, or the remaining TTL of the key that
	// exists, in milliseconds, or -1 when it has none.
	//
	//go:embed scripts/acquire_waiting.lua
	acquireWaitingScript string

	// checkScript tells whether every key holds the token, to resume a hold.
	// It returns the smallest remaining TTL in milliseconds (≥ 0) when every
	// key holds the token, otherwise checkHeld, checkMissing or
	// checkPersistent, in that order of precedence.
	//
	//go:embed scripts/check.lua
	checkScript string

	// repairScript sets every key again with the token and the TTL ARGV[2]
	// (milliseconds), the keys the node kept included, unless one of them
	// holds another token. It returns 1, or -1 when a key holds another
	// token (nothing is changed); a repair's replies are not awaited.
	//
	//go:embed scripts/repair.lua
	repairScript string

	// acquireFencedScript is acquireMultiScript with each lock key's
	// fencing counter as further keys, after the lock keys: when it set
	// every lock key, it returns the largest counter as a decimal string
	// ("0" when none exists), otherwise the remaining TTL as
	// acquireMultiScript does. A counter that is not a decimal integer from
	// 0 to 2^63−2 is refused before any key is set, with an error reply
	// whose code is fenceErrorCode.
	//
	//go:embed scripts/acquire_fenced.lua
	acquireFencedScript string

	// watchScript reads the value and the remaining TTL of every key,
	// {value, ttl, …}: the read that arms a renewed hold's keys for key
	// tracking (see watcher).
	//
	//go:embed scripts/watch.lua
	watchScript string

	// The scripts of a read/write lock (see RWMutex): the writer takes the
	// writer's key only while no reader's entry is live, and leaves a
	// waiting marker that keeps new readers off while readers remain;
	// readers are entries of a sorted set scored by their expiry by the
	// node's clock (TIME). The writer's hold is otherwise a plain hold:
	// releaseScript, extendScript, checkScript, repairScript and the
	// fence commit serve it.
	//
	//go:embed scripts/acquire_write.lua
	acquireWriteScript string
	//go:embed scripts/acquire_read.lua
	acquireReadScript string
	//go:embed scripts/release_read.lua
	releaseReadScript string
	//go:embed scripts/extend_read.lua
	extendReadScript string
	//go:embed scripts/check_read.lua
	checkReadScript string
	//go:embed scripts/repair_read.lua
	repairReadScript string

	// The scripts of a fair lock (MutexOptions.Fair): the acquisition
	// passes only the first waiter in line of a queue ordered by tickets,
	// each waiter kept there by a heartbeat scored by the node's clock;
	// a waiter's ticket is taken in two rounds, as a fence is.
	//
	//go:embed scripts/acquire_fair.lua
	acquireFairScript string
	//go:embed scripts/fair_ticket.lua
	fairTicketScript string
	//go:embed scripts/fair_enqueue.lua
	fairEnqueueScript string
	//go:embed scripts/fair_leave.lua
	fairLeaveScript string
	//go:embed scripts/release_fair.lua
	releaseFairScript string

	// acquirePermitScript sets the first free key of KEYS, the candidate
	// slots of a Semaphore, as SET NX PX ARGV[2] does: it returns the
	// position of the key it set, from 0, as a decimal string; otherwise
	// the shortest remaining TTL of the keys, in milliseconds, or -1 when
	// none has one.
	//
	//go:embed scripts/acquire_permit.lua
	acquirePermitScript string

	// acquirePermitFencedScript is acquirePermitScript with the
	// candidates' fencing counters as further keys: with the position of
	// the slot it set it returns, after a space, that slot's counter, as
	// acquireFencedScript does.
	//
	//go:embed scripts/acquire_permit_fenced.lua
	acquirePermitFencedScript string

	// permitsFreeScript reads which keys of KEYS, a Semaphore's slots,
	// exist: one character per key, "0" for a free slot, "1" for a held
	// one (see Semaphore.Available).
	//
	//go:embed scripts/permits_free.lua
	permitsFreeScript string

	// forceReleaseScript deletes a lock key whoever holds it, and
	// announces the release (see Client.ForceRelease).
	//
	//go:embed scripts/force_release.lua
	forceReleaseScript string

	// commitFenceScript raises every lock key's fencing counter (the keys
	// after the lock keys) to the fence ARGV[2] if every lock key holds the
	// token; it returns 1, or 0 when the node no longer holds the hold.
	//
	//go:embed scripts/commit_fence.lua
	commitFenceScript string
)

// fenceErrorCode is the code of the error reply of the fencing scripts for
// a counter, or a fence, that is not a decimal integer in their range.
const fenceErrorCode = "FENCE"

// Replies of extendScript.
const (
	// extendExtended means every key held the token and was extended.
	extendExtended = 1
	// extendMissing means a key was missing or expired; nothing was changed.
	extendMissing = 0
	// extendHeld means a key holds another token; nothing was changed.
	extendHeld = -1
)

// Replies of checkScript other than a remaining TTL.
const (
	// checkPersistent means every key holds the token but one has no TTL,
	// which a lock key should never lack.
	checkPersistent = -1
	// checkMissing means a key is missing or expired.
	checkMissing = -2
	// checkHeld means a key holds another token.
	checkHeld = -3
)

// newScript returns the script for a Lua source without its comment lines:
// the files keep their explanations, and the nodes get only the code, which
// a release sends whole with every EVAL.
func newScript(source string) *mux.Script {
	var code strings.Builder
	for line := range strings.Lines(source) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			code.WriteString(line)
		}
	}
	return mux.NewScript(code.String())
}
