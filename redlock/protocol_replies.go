package redlock

import (
	"bytes"

	"github.com/lockmux/lockmux/resp"
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
